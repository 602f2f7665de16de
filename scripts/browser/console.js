// The service's console in a real browser: the page `mini-agent serve` prints, driven as a
// person would.
//
//   node scripts/browser/console.js [path/to/mini-agent] [--screenshots DIR]
//
// Starts the real binary (`mini-agent serve --demo --port 0`, default target/debug/mini-agent)
// in a scratch directory that already has a session (made at the terminal with -p) and a task
// list, opens the URL it printed in headless Chromium, and checks what a person would see and
// do: the sidebar lists the terminal's session; a new session takes a message; the demo's
// write waits for approval, shows its question, and Allow lets it run (the file is on disk);
// Deny with a reason is denied; the task board shows its five columns, adds a task, resets one;
// the page loads nothing from elsewhere and logs no error (a CSP violation would be one). It
// prints what it did and exits 1 naming what failed.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn, execFileSync } = require('child_process');
const { launch } = require('./chromium');

const repo = path.join(__dirname, '..', '..');

function parseArguments(argv) {
  const options = { binary: path.join(repo, 'target', 'debug', 'mini-agent'), screenshots: null };
  for (let at = 0; at < argv.length; at++) {
    if (argv[at] === '--screenshots') options.screenshots = argv[++at];
    else if (argv[at].startsWith('-')) throw new Error(`unknown option ${argv[at]}; usage: console.js [mini-agent] [--screenshots DIR]`);
    else options.binary = path.resolve(argv[at]);
  }
  if (!fs.existsSync(options.binary)) throw new Error(`${options.binary} does not exist; build it with cargo build`);
  return options;
}

// The environment a test gives the binary: nothing of the developer's.
function environment(home) {
  const env = { PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), NO_COLOR: '1' };
  return env;
}

// Starts `mini-agent serve` and resolves with { url, child } once it printed its URL.
function serve(binary, dir, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['serve', '--demo', '--port', '0'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const seen = (chunk) => {
      output += chunk;
      const match = output.match(/http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]+/);
      if (match) resolve({ url: match[0], child, output: () => output });
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.on('exit', (code) => reject(new Error(`mini-agent serve exited (${code}) before printing its URL:\n${output}`)));
  });
}

async function main() {
  const options = parseArguments(process.argv.slice(2));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mini-agent-console-'));
  const env = environment(dir);
  const run = (...words) => execFileSync(options.binary, words, { cwd: dir, env, stdio: 'pipe' }).toString();
  // A session made at the terminal, and a task list with one task that needs a human.
  run('--demo', '--allow-write', '-p', 'create from-terminal.txt containing hi');
  run('tasks', 'add', 'create t.txt containing t', '--verify', 'grep -q t t.txt');
  run('tasks', 'add', 'create u.txt containing u', '--verify', 'grep -q u u.txt');
  const tasksFile = path.join(dir, '.mini_agent', 'tasks.json');
  const list = JSON.parse(fs.readFileSync(tasksFile, 'utf8'));
  list.tasks[1].status = 'needs_human';
  list.tasks[1].last_error = 'the verify command failed';
  fs.writeFileSync(tasksFile, JSON.stringify(list, null, 2));

  const failures = [];
  const check = (ok, what) => {
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
    if (!ok) failures.push(what);
  };
  const server = await serve(options.binary, dir, env);
  const { context, close } = await launch();
  const foreign = [];
  const errors = [];
  try {
    const page = await context.newPage();
    page.on('request', (request) => {
      if (!request.url().startsWith(new URL(server.url).origin)) foreign.push(request.url());
    });
    page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()); });
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(server.url);

    // The sidebar lists the session the terminal made.
    await page.waitForSelector('#session-list li');
    const prompts = await page.$$eval('#session-list .prompt', (nodes) => nodes.map((node) => node.textContent));
    check(prompts.includes('create from-terminal.txt containing hi'), `the sidebar lists the terminal's session (${JSON.stringify(prompts)})`);
    await page.click('#session-list li');
    await page.waitForSelector('#transcript .tool');
    const toolLine = await page.textContent('#transcript .tool summary');
    check(toolLine.includes('✓') && toolLine.includes('write_file from-terminal.txt'), `its transcript shows the tool line as the terminal does (${toolLine.trim()})`);

    // A new session; a write the demo makes waits for approval; Allow runs it.
    await page.click('#new-session button');
    await page.waitForFunction(() => document.querySelectorAll('#session-list li').length === 2);
    await page.waitForFunction(() => !document.querySelector('#message').disabled);
    await page.fill('#message', 'create approved.txt containing yes');
    await page.press('#message', 'Enter');
    await page.waitForSelector('.approval .question');
    const question = await page.textContent('.approval .question');
    check(question.includes('write_file wants to create approved.txt'), `the approval shows the terminal's question (${question})`);
    const added = await page.$$eval('.approval .diff .add', (nodes) => nodes.map((node) => node.textContent.trim()));
    check(added.includes('+yes'), `the approval shows the change as a diff (${JSON.stringify(added)})`);
    if (options.screenshots) await page.screenshot({ path: path.join(options.screenshots, 'console-approval.png') });
    await page.click('.approval button.allow');
    await page.waitForSelector('#transcript .tool.ok');
    await page.waitForFunction(() => document.querySelectorAll('#transcript .answer').length > 0);
    check(fs.existsSync(path.join(dir, 'approved.txt')), 'Allow let the write run: approved.txt is on disk');
    const answer = await page.textContent('#transcript .answer');
    check(answer.trim().length > 0, `the answer is shown (${answer.trim().slice(0, 60)})`);

    // Deny, with a reason for the model.
    await page.fill('#message', 'create denied.txt containing no');
    await page.press('#message', 'Enter');
    await page.waitForSelector('.approval .question');
    await page.fill('.approval input', 'not today');
    await page.click('.approval button.deny');
    await page.waitForSelector('#transcript .tool.denied');
    check(!fs.existsSync(path.join(dir, 'denied.txt')), 'Deny kept the write from running');
    if (options.screenshots) await page.screenshot({ path: path.join(options.screenshots, 'console-session.png') });

    // The task board.
    await page.click('#show-tasks');
    await page.waitForSelector('#board .column');
    const columns = await page.$$eval('#board .column h2 span:first-child', (nodes) => nodes.map((node) => node.textContent));
    check(JSON.stringify(columns) === JSON.stringify(['pending', 'in progress', 'done', 'failed', 'needs human']), `the board has the five columns (${columns})`);
    const pending = () => page.$$eval('#board [data-status="pending"] .card .name', (nodes) => nodes.map((node) => node.textContent));
    check((await pending()).some((name) => name.includes('create t.txt containing t')), 'the pending task is in its column');
    await page.fill('#task-name', 'create v.txt containing v');
    await page.click('#add-task button');
    await page.waitForFunction(() => Array.from(document.querySelectorAll('#board [data-status="pending"] .card .name')).some((node) => node.textContent.includes('v.txt')));
    check(JSON.parse(fs.readFileSync(tasksFile, 'utf8')).tasks.some((task) => task.name === 'create v.txt containing v'), 'a task added on the board is in tasks.json');
    await page.click('#board [data-status="needs_human"] .card button.reset');
    await page.waitForFunction(() => document.querySelectorAll('#board [data-status="needs_human"] .card').length === 0);
    check((await pending()).some((name) => name.includes('u.txt')), 'Reset moved the task that needed a human back to pending');
    if (options.screenshots) await page.screenshot({ path: path.join(options.screenshots, 'console-board.png') });

    check(foreign.length === 0, `the page asked nothing of any other origin (${foreign.join(', ')})`);
    check(errors.length === 0, `the page logged no error (${errors.join(' | ')})`);
  } finally {
    await close();
    server.child.kill('SIGTERM');
    await new Promise((resolve) => server.child.once('exit', resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  }
  // The session made over HTTP is a journal the terminal lists.
  if (failures.length) {
    console.error(`console: ${failures.length} check(s) failed: ${failures.join('; ')}`);
    process.exit(1);
  }
  console.log('console: all checks passed');
}

main().catch((error) => {
  console.error(`console: ${error.stack || error}`);
  process.exit(1);
});
