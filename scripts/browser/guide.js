// The guide in a real browser: does every page fit the screen, in both languages?
//
//   node scripts/browser/guide.js [--screenshots DIR] [path/to/index.html]
//
// Opens guide/index.html (file://) in headless Chromium at a desktop width (1280 px) and a
// phone width (390 px), in English and Chinese, and checks what a reader would see: the page
// never scrolls sideways; at 1280 px no listing scrolls sideways and no line of up to 110
// columns (rustfmt's max_width) wraps; whatever scrolls sideways (a diagram or a table on a
// phone, a listing) shows a cue that it does; the search box's placeholder is whole; the
// contents mark the section being read, also inside a `###` subsection; the language toggle
// keeps the place; search finds; the theme toggle recolours code. It prints the figures and
// exits 1 naming each element that fails. --screenshots DIR saves what it looked at.
'use strict';
const fs = require('fs');
const path = require('path');
const { launch } = require('./chromium');

const CODE_COLUMNS = 110; // rustfmt.toml's max_width
const VIEWS = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
];
const LANGUAGES = ['en', 'zh'];

function parseArguments(argv) {
  const options = { page: path.join(__dirname, '..', '..', 'guide', 'index.html'), screenshots: null };
  for (let at = 0; at < argv.length; at++) {
    if (argv[at] === '--screenshots') options.screenshots = argv[++at];
    else if (argv[at].startsWith('-')) throw new Error(`unknown option ${argv[at]}; usage: guide.js [--screenshots DIR] [index.html]`);
    else options.page = argv[at];
  }
  if (!fs.existsSync(options.page)) throw new Error(`${options.page} does not exist; build it with cargo run --release --bin build-guide`);
  return options;
}

// Runs in the page: everything measured in one view, returned as plain data.
function measure(codeColumns) {
  const visible = (element) => element.getClientRects().length > 0;
  const viewport = document.documentElement.clientWidth;
  const lang = document.documentElement.dataset.lang;
  // A readable name for a failing element: what it is and the section it is in.
  const headings = Array.from(document.querySelectorAll(`main [id^="${lang}-"]`));
  const sectionOf = (element) => {
    let found = null;
    for (const heading of headings) {
      if (heading.compareDocumentPosition(element) & Node.DOCUMENT_POSITION_FOLLOWING) found = heading;
      else break;
    }
    return found ? `#${found.id}` : '(before the first heading)';
  };
  const describe = (element) => {
    const figure = element.closest('figure');
    const caption = figure && figure.querySelector('figcaption');
    const what = element.tagName.toLowerCase() + (element.className && typeof element.className === 'string' ? '.' + element.className.trim().split(/\s+/).join('.') : '');
    const label = caption ? ` "${caption.textContent.trim().slice(0, 60)}"` : ` "${element.textContent.trim().replace(/\s+/g, ' ').slice(0, 60)}"`;
    return `${what}${label} in ${sectionOf(element)}`;
  };
  // Columns a line takes in a monospace font: East Asian wide characters take two.
  const columns = (text) => Array.from(text).reduce((sum, c) => sum + (/[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/.test(c) ? 2 : 1), 0);

  // What sticks out past the right edge without being inside something that scrolls.
  const stickingOut = [];
  const scrolls = (element) => /auto|scroll|hidden/.test(getComputedStyle(element).overflowX);
  const walk = (element) => {
    for (const child of element.children) {
      if (!visible(child)) continue;
      if (child.getBoundingClientRect().right > viewport + 0.5) {
        // The outermost element that sticks out names the problem; inside a scroller it is fine.
        stickingOut.push(describe(child));
        continue;
      }
      if (!scrolls(child)) walk(child);
    }
  };
  walk(document.body);

  const listings = Array.from(document.querySelectorAll('main pre')).filter(visible);
  const listingsScrolling = listings.filter((pre) => pre.scrollWidth > pre.clientWidth + 1);
  let shortLinesWrapped = [], longLinesWrapped = 0, lines = 0;
  for (const pre of listings) {
    const rowHeight = parseFloat(getComputedStyle(pre).lineHeight);
    for (const line of pre.querySelectorAll('.l')) {
      lines++;
      const wrapped = line.getBoundingClientRect().height > rowHeight * 1.5;
      if (!wrapped) continue;
      if (columns(line.textContent) <= codeColumns) shortLinesWrapped.push(`${describe(pre)}: "${line.textContent.trim().slice(0, 50)}" (${columns(line.textContent)} columns)`);
      else longLinesWrapped++;
    }
  }

  // Everything in the text that scrolls sideways, and whether it says so: it must sit in a
  // .frame that page.js marked, with the arrow of the side with more to see showing; a
  // diagram's caption must add its note.
  const scrollers = Array.from(document.querySelectorAll('main *')).filter((element) =>
    /auto|scroll/.test(getComputedStyle(element).overflowX) && visible(element) && element.scrollWidth > element.clientWidth + 1);
  const kindOf = (element) => element.closest('figure.diagram') ? 'diagram' : element.querySelector('table') ? 'table' : element.closest('pre') ? 'listing' : 'other';
  const withoutCue = scrollers.filter((element) => {
    const frame = element.parentElement;
    if (!element.classList.contains('scroll') || !frame.classList.contains('scrolls')) return true;
    const arrow = getComputedStyle(frame, element.scrollLeft > 1 ? '::before' : '::after');
    if (arrow.content === 'none' || arrow.content === 'normal' || arrow.opacity === '0') return true;
    const caption = element.closest('figure.diagram')?.querySelector('figcaption');
    return caption ? /^(none|normal)$/.test(getComputedStyle(caption, '::after').content) : false;
  }).map(describe);
  const count = (kind) => scrollers.filter((element) => kindOf(element) === kind).length;
  const diagrams = Array.from(document.querySelectorAll('main figure.diagram')).filter(visible).length;
  const tables = Array.from(document.querySelectorAll('main table')).filter(visible).length;

  // The placeholder: its text set in the box's font, against the room inside the box.
  const search = document.getElementById('search');
  const style = getComputedStyle(search);
  const probe = document.createElement('span');
  probe.textContent = search.placeholder;
  Object.assign(probe.style, { position: 'absolute', visibility: 'hidden', whiteSpace: 'pre', font: style.font, letterSpacing: style.letterSpacing });
  document.body.append(probe);
  const placeholder = {
    text: search.placeholder,
    width: Math.ceil(probe.getBoundingClientRect().width),
    room: Math.floor(search.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)),
  };
  probe.remove();

  return {
    lang, viewport, pageWidth: document.documentElement.scrollWidth, stickingOut: stickingOut.slice(0, 10),
    listings: listings.length, lines, listingsScrolling: listingsScrolling.length,
    shortLinesWrapped: shortLinesWrapped.length, shortLinesWrappedExamples: shortLinesWrapped.slice(0, 10), longLinesWrapped,
    diagrams, diagramsScrolling: count('diagram'), tables, tablesScrolling: count('table'),
    scrolling: scrollers.length, withoutCue, placeholder,
  };
}

// Scrolls so that `id` is where a reader who got there is, and lets the page's scroll handler run.
async function scrollTo(page, id) {
  await page.evaluate((id) => {
    const heading = document.getElementById(id);
    window.scrollTo(0, heading.getBoundingClientRect().top + window.scrollY - 64 + 8);
  }, id);
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
}

// Every `###` heading of the language, with the heading the contents list for it (the nearest
// `#`/`##` before it), and one `##` heading that is listed itself.
async function spyCases(page, lang) {
  return page.evaluate((lang) => {
    const headings = Array.from(document.querySelectorAll(`main :is(h1, h2, h3)[id^="${lang}-"]`));
    const cases = [];
    let listed = null;
    for (const heading of headings) {
      if (heading.tagName !== 'H3') listed = heading.id;
      else cases.push({ id: heading.id, expected: listed });
    }
    const h2 = headings.find((heading) => heading.tagName === 'H2' && heading.id !== cases[0]?.expected);
    if (h2) cases.push({ id: h2.id, expected: h2.id });
    return cases;
  }, lang);
}

async function checkBehaviour(page, lang, where, failures, report) {
  // Scroll-spy: inside a subsection the contents mark its section, and its chapter stays open.
  const cases = await spyCases(page, lang);
  // The book may lose its ### headings when chapters are rewritten: then that part is not tested,
  // and the line below says so.
  const subsections = cases.filter((c) => c.id !== c.expected).length;
  if (!subsections) report.push('NOT TESTED: marking inside a ### section (the book has no ### heading)');
  let right = 0;
  for (const c of cases) {
    await scrollTo(page, c.id);
    const marked = await page.evaluate(() => {
      const link = document.querySelector('nav a.current');
      const chapter = link && link.closest('.toc > ol > li');
      return { href: link && link.getAttribute('href'), open: !!(chapter && chapter.classList.contains('open')) };
    });
    if (marked.href === `#${c.expected}` && marked.open) right++;
    else failures.push(`${where}: scrolled into #${c.id}, the contents mark ${marked.href || 'nothing'}${marked.open ? '' : ' (chapter collapsed)'}, expected #${c.expected}`);
  }
  report.push(`contents mark the section being read: ${right}/${cases.length} headings (${subsections} of them ### subsections)`);

  if (!cases.length) {
    failures.push(`${where}: the book has no ## heading to scroll to`);
    return;
  }
  // The language toggle keeps the place: the same section, in the other language.
  const place = cases[0].id.slice(3);
  await scrollTo(page, cases[0].id);
  await page.click('#lang-toggle');
  const other = lang === 'en' ? 'zh' : 'en';
  const after = await page.evaluate(() => ({ lang: document.documentElement.dataset.lang, hash: location.hash }));
  if (after.lang !== other || after.hash !== `#${other}-${place}`) failures.push(`${where}: the language toggle went to ${after.lang} ${after.hash}, expected ${other} #${other}-${place}`);
  await page.click('#lang-toggle');

  // What a reader selects in a listing is its text exactly (the line spans add nothing).
  const copied = await page.evaluate(() => {
    const pre = document.querySelector('main figure.code pre');
    const range = document.createRange();
    range.selectNodeContents(pre);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    // (A selection leaves out the listing's final newline, in any version of the page.)
    const same = getSelection().toString() === pre.textContent.replace(/\n$/, '');
    getSelection().removeAllRanges();
    return same;
  });
  if (!copied) failures.push(`${where}: selecting a listing does not give its text exactly`);

  // Search finds a section; the theme toggle recolours the listings.
  await page.fill('#search', lang === 'en' ? 'journal' : '日志');
  const results = await page.locator('#results a').count();
  if (!results) failures.push(`${where}: searching found nothing`);
  await page.fill('#search', '');
  const background = () => page.evaluate(() => getComputedStyle(document.querySelector('main pre')).backgroundColor);
  const before = await background();
  await page.click('#theme-toggle');
  const toggled = await background();
  await page.click('#theme-toggle');
  if (before === toggled) failures.push(`${where}: the theme toggle left the listings' background at ${before}`);
  report.push(`language toggle keeps the place, a selected listing copies exactly, search finds ${results} sections, theme toggle recolours code`);
}

async function main() {
  const options = parseArguments(process.argv.slice(2));
  const url = 'file://' + path.resolve(options.page);
  if (options.screenshots) fs.mkdirSync(options.screenshots, { recursive: true });
  const failures = [];
  const started = Date.now();
  const { context, close } = await launch();
  try {
    for (const view of VIEWS) {
      for (const lang of LANGUAGES) {
        const page = await context.newPage();
        page.setDefaultTimeout(60_000);
        page.on('pageerror', (error) => failures.push(`${view.name} ${lang}: script error: ${error.message}`));
        await page.setViewportSize({ width: view.width, height: view.height });
        await page.goto(`${url}#lang=${lang}`, { waitUntil: 'load' });
        const m = await page.evaluate(measure, CODE_COLUMNS);
        const where = `${view.name} ${view.width} px, ${lang}`;
        const fail = (message) => failures.push(`${where}: ${message}`);
        if (m.lang !== lang) fail(`the page shows language ${m.lang}`);
        if (m.pageWidth > m.viewport) fail(`the page is ${m.pageWidth} px wide in a ${m.viewport} px window; sticking out: ${m.stickingOut.join('; ') || '(nothing found)'}`);
        if (view.name === 'desktop') {
          if (m.listingsScrolling) fail(`${m.listingsScrolling} listings scroll sideways`);
          if (m.shortLinesWrapped) fail(`${m.shortLinesWrapped} lines of at most ${CODE_COLUMNS} columns wrap: ${m.shortLinesWrappedExamples.join('; ')}`);
          if (m.diagramsScrolling) fail(`${m.diagramsScrolling} diagrams scroll sideways at desktop width`);
        }
        if (m.withoutCue.length) fail(`${m.withoutCue.length} of ${m.scrolling} things scroll sideways with nothing saying so: ${m.withoutCue.slice(0, 5).join('; ')}${m.withoutCue.length > 5 ? '; …' : ''}`);
        if (m.placeholder.width > m.placeholder.room) fail(`the search placeholder "${m.placeholder.text}" is cut: ${m.placeholder.width} px of text in ${m.placeholder.room} px`);
        console.log(`${where}: page ${m.pageWidth} px wide in ${m.viewport}; listings ${m.listings} (${m.lines} lines): ${m.listingsScrolling} scroll sideways, ${m.longLinesWrapped} lines over ${CODE_COLUMNS} columns wrap, ${m.shortLinesWrapped} shorter ones wrap; diagrams ${m.diagrams}: ${m.diagramsScrolling} scroll; tables ${m.tables}: ${m.tablesScrolling} scroll; ${m.scrolling - m.withoutCue.length} of ${m.scrolling} scrolling things show a cue; placeholder "${m.placeholder.text}" ${m.placeholder.width}/${m.placeholder.room} px`);
        if (view.name === 'desktop') {
          const report = [];
          await checkBehaviour(page, lang, where, failures, report);
          console.log(`${where}: ${report.join('; ')}`);
        }
        if (options.screenshots) await screenshots(page, view, lang, options.screenshots);
        await page.close();
      }
    }
  } finally {
    await close();
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (failures.length) {
    for (const failure of failures) console.error(`FAILED: ${failure}`);
    console.error(`browser check of the guide: ${failures.length} failures (${seconds} s)`);
    process.exit(1);
  }
  console.log(`browser check of the guide: all passed (${seconds} s)`);
}

// For a person to look at: the top of the book, a chapter's first listing, a diagram.
async function screenshots(page, view, lang, folder) {
  const shoot = async (what, selector) => {
    if (selector) {
      await page.evaluate((selector) => {
        const element = Array.from(document.querySelectorAll(selector)).find((e) => e.getClientRects().length);
        window.scrollTo(0, element.getBoundingClientRect().top + window.scrollY - 120);
      }, selector);
    }
    await page.screenshot({ path: path.join(folder, `${view.name}-${lang}-${what}.png`) });
  };
  await shoot('top', null);
  await shoot('listing', 'section.chapter[data-file^="01-"] figure.code');
  await shoot('diagram', 'figure.diagram');
  await shoot('table', 'main table');
}

main().catch((error) => {
  console.error(`browser check of the guide: ${error.stack || error}`);
  process.exit(1);
});
