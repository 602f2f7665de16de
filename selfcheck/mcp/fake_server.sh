#!/bin/sh
# A tiny scripted MCP server for the tests (stdio, newline-delimited JSON-RPC 2.0).
# It knows the handshake and five tools; FAKE_MODE makes it misbehave on purpose:
#   silent   never answers anything              garbage  prints junk lines before each answer
#   badinit  answers initialize with junk JSON   exit     exits at once with status 3
#   hugeschemas  lists 256 tools, each with a 15 KB schema (just under the per-tool cap)
# With $FAKE_GO set, initialize is answered only once that file exists (a slow first start).
# Every line received is appended to $FAKE_LOG when it is set (in silent mode only
# "silent start" and "silent stop", so a test sees which servers ran at the same time).
# Tools: echo (returns its arguments), fail (isError), slow (sleeps $FAKE_SLOW or 30 s),
#        (with $FAKE_LOG set, "answered ID" goes to $FAKE_LOG.answered once it has answered),
#        die (killed mid-call by SIGKILL), big (a result of $FAKE_BIG bytes, default 50 MB),
#        endless (a line that never ends).
case "$FAKE_MODE" in
  silent)
    [ -n "$FAKE_LOG" ] && echo "silent start" >>"$FAKE_LOG"
    while IFS= read -r line; do :; done
    [ -n "$FAKE_LOG" ] && echo "silent stop" >>"$FAKE_LOG"
    exit 0 ;;
  exit) echo "fake server: exiting at once" >&2; exit 3 ;;
esac
echo "fake server started (pid $$)" >&2
reply() { printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$1" "$2"; }
text() { reply "$1" "{\"content\":[{\"type\":\"text\",\"text\":\"$2\"}]$3}"; }
while IFS= read -r line; do
  [ -n "$FAKE_LOG" ] && printf '%s\n' "$line" >>"$FAKE_LOG"
  id=$(printf '%s' "$line" | sed -n 's/^[^}]*"id":\([0-9][0-9]*\).*/\1/p')
  [ "$FAKE_MODE" = garbage ] && printf 'this is not json\n{"jsonrpc":"2.0","id":999,"result":{}}\n[1,2\n'
  case "$line" in
    *'"method":"initialize"'*)
      if [ -n "$FAKE_GO" ]; then while [ ! -e "$FAKE_GO" ]; do sleep 0.05; done; fi
      if [ "$FAKE_MODE" = badinit ]; then printf '{"jsonrpc":"2.0","id":%s,"result":\n' "$id"; continue; fi
      reply "$id" '{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}' ;;
    *'"method":"tools/list"'*)
      if [ "$FAKE_MODE" = hugeschemas ]; then
        bulk=$(head -c 15000 /dev/zero | tr '\0' s)
        printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[' "$id"
        n=0; while [ $n -lt 256 ]; do
          [ $n -gt 0 ] && printf ','
          printf '{"name":"t%s","inputSchema":{"type":"object","properties":{"p":{"type":"string","description":"%s"}}}}' $n "$bulk"
          n=$((n + 1))
        done
        printf ']}}\n'; continue
      fi
      case "$line" in
        *'"cursor"'*) reply "$id" '{"tools":[{"name":"slow","description":"Sleeps","inputSchema":{"type":"object"}},{"name":"die","inputSchema":{"type":"object"}},{"name":"big","inputSchema":{"type":"object"}},{"name":"endless","inputSchema":{"type":"object"}}]}' ;;
        *) reply "$id" '{"tools":[{"name":"echo","description":"Echoes its arguments","inputSchema":{"$schema":"x","type":"object","properties":{"message":{"type":"string"}}}},{"name":"fail","inputSchema":{"type":"object"}}],"nextCursor":"page2"}' ;;
      esac ;;
    *'"method":"tools/call"'*)
      case "$line" in
        *'"name":"echo"'*)
          args=$(printf '%s' "$line" | sed -n 's/.*"arguments":\({[^}]*}\).*/\1/p' | sed 's/\\/\\\\/g; s/"/\\"/g')
          text "$id" "echo $args" ;;
        *'"name":"fail"'*) text "$id" "the fake tool failed" ',"isError":true' ;;
        *'"name":"slow"'*)
          (sleep "${FAKE_SLOW:-30}"; text "$id" "slept"
           [ -n "$FAKE_LOG" ] && echo "answered $id" >>"$FAKE_LOG.answered") & ;;
        *'"name":"die"'*) kill -9 $$ ;;
        *'"name":"endless"'*) yes 0123456789abcdef | tr -d '\n' ;;
        *'"name":"big"'*)
          printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' "$id"
          head -c "${FAKE_BIG:-52428800}" /dev/zero | tr '\0' a
          printf '"}]}}\n' ;;
      esac ;;
    *'"method":"ping"'*) reply "$id" '{}' ;;
  esac
done
