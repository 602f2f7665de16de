// Starts Debian's Chromium (/usr/bin/chromium) headless for a check, through playwright-core.
//
// Every check in this folder launches the browser here, so they all run the same way: the
// system's browser (nothing is downloaded: the machines reach only package registries), a
// fresh profile that is removed afterwards, and no traffic of the browser's own (updates,
// sync, QUIC, first-run pages), so a check sees only the page it opened.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const EXECUTABLE = process.env.CHROMIUM || '/usr/bin/chromium';

// Returns { context, close }: a browser context with a profile of its own. `close` stops the
// browser and deletes the profile; call it in a `finally`.
async function launch(options = {}) {
  if (!fs.existsSync(EXECUTABLE)) {
    throw new Error(`${EXECUTABLE} is missing: install Debian's chromium (apt-get install -y chromium fonts-noto-cjk), or set CHROMIUM to a Chromium binary`);
  }
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'mini-agent-chromium-'));
  let context;
  try {
    // A persistent context is the way playwright takes a profile directory of our own
    // (it refuses --user-data-dir among the arguments).
    context = await chromium.launchPersistentContext(profile, {
      executablePath: EXECUTABLE,
      headless: true,
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
      ],
      timeout: 60_000,
      ...options,
    });
  } catch (error) {
    fs.rmSync(profile, { recursive: true, force: true });
    throw error;
  }
  const close = async () => {
    try { await context.close(); } finally { fs.rmSync(profile, { recursive: true, force: true }); }
  };
  return { context, close };
}

module.exports = { launch, EXECUTABLE };
