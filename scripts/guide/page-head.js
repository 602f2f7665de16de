// Runs before the body is drawn, so the page never flashes the wrong theme or language.
// A hash such as #theme=dark&lang=zh&at=tool-loop&q=循环 overrides the stored choices (and is
// what the screenshots use); with at= or chapter= (see page.js) the text stays hidden until page.js has cut
// it to start there, so no other part of the book is ever drawn first.
(function () {
  var params = new URLSearchParams(location.hash.indexOf('=') > 0 ? location.hash.slice(1) : '');
  var stored = function (key) { try { return localStorage.getItem(key); } catch (e) { return null; } };
  var fragmentLang = /^#(en|zh)-/.exec(location.hash);
  var lang = params.get('lang') || (fragmentLang && fragmentLang[1]) || stored('guide-lang') ||
    (/^zh/i.test(navigator.language || '') ? 'zh' : 'en');
  var theme = params.get('theme') || stored('guide-theme');
  var root = document.documentElement;
  root.classList.add('js');
  root.dataset.lang = lang === 'zh' ? 'zh' : 'en';
  if (theme === 'dark' || theme === 'light') root.dataset.theme = theme;
  // Headless Chromium captures a scrolled page blank, so there a plain #zh-id link cuts too.
  var headless = /HeadlessChrome/.test(navigator.userAgent);
  if (params.get('at') || params.get('chapter') || (headless && fragmentLang)) root.classList.add('cutting');
})();
