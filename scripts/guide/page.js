// The page's behaviour: language toggle that keeps the place, theme toggle, search, contents.
(function () {
  'use strict';
  var root = document.documentElement;
  var index = JSON.parse(document.getElementById('search-index').textContent);
  var search = document.getElementById('search');
  var results = document.getElementById('results');
  var labels = {
    en: { other: '中文', search: 'Search (press /)', searchShort: 'Search', none: 'No matches.', missing: 'No section here is called ' },
    zh: { other: 'English', search: '搜索（按 /）', searchShort: '搜索', none: '没有找到。', missing: '本书没有这个小节：' }
  };

  function remember(key, value) { try { localStorage.setItem(key, value); } catch (e) { /* private mode */ } }
  function language() { return root.dataset.lang; }

  var HEADER = 56; // px hidden under the fixed header

  function headingsOf(lang) { return document.querySelectorAll('main [id^="' + lang + '-"]'); }
  function pageTop(element) { return element.getBoundingClientRect().top + window.scrollY; }

  // Where the reader is: the last heading above the top of the window (its id without the
  // language prefix), and how far through its section the window has scrolled (0 to 1).
  function currentPlace() {
    var headings = Array.prototype.filter.call(headingsOf(language()), function (heading) {
      return heading.getClientRects().length > 0; // not cut out of the view
    });
    var index = -1;
    while (index + 1 < headings.length && headings[index + 1].getBoundingClientRect().top <= HEADER + 24) index++;
    if (index < 0 && headings.length && document.querySelector('.cut')) index = 0; // a cut view starts there
    if (index < 0) return null;
    var start = pageTop(headings[index]);
    var end = index + 1 < headings.length ? pageTop(headings[index + 1]) : document.body.scrollHeight;
    var fraction = Math.min(1, Math.max(0, (window.scrollY + HEADER - start) / Math.max(1, end - start)));
    return { id: headings[index].id.slice(3), fraction: fraction };
  }

  function currentSection() {
    var place = currentPlace();
    return place && place.id;
  }

  // Scrolls to the same point of the same section in the current language.
  function show(id, fraction) {
    var headings = Array.prototype.slice.call(headingsOf(language()));
    var target = document.getElementById(language() + '-' + id);
    if (!target) return;
    var next = headings[headings.indexOf(target) + 1];
    var start = pageTop(target);
    var end = next ? pageTop(next) : document.body.scrollHeight;
    window.scrollTo(0, start + (fraction || 0) * (end - start) - HEADER);
    history.replaceState(null, '', '#' + target.id);
    markCurrent();
  }

  function setLanguage(lang, keepPlace) {
    var place = keepPlace ? currentPlace() : null;
    uncut(); // a view cut to one section also cut the other language's copy of it
    root.dataset.lang = lang;
    root.lang = lang === 'zh' ? 'zh-CN' : 'en';
    remember('guide-lang', lang);
    document.getElementById('lang-toggle').textContent = labels[lang].other;
    fitPlaceholder();
    if (place) show(place.id, place.fraction);
    markAllScrolling(); // the other language's figures were hidden, and measured nothing
    runSearch();
  }

  // The search box says "press /" where that fits, and only "Search" where it would be cut
  // (a phone, a narrow window, a wide font).
  var measure = document.createElement('canvas').getContext('2d');
  function fitPlaceholder() {
    var style = getComputedStyle(search);
    measure.font = style.fontSize + ' ' + style.fontFamily;
    var room = search.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    var long = labels[language()].search;
    // A margin, as fonts measure a little differently in a canvas and in the box.
    search.placeholder = measure.measureText(long).width + 8 <= room ? long : labels[language()].searchShort;
  }

  // A diagram or table wider than the column scrolls sideways in its .frame, which says so
  // (page.css draws an arrow on each side with more to see; a diagram's caption adds a note).
  function markScrolling(box) {
    var frame = box.parentElement;
    var overflow = box.scrollWidth - box.clientWidth;
    frame.classList.toggle('scrolls', overflow > 1);
    frame.classList.toggle('at-start', box.scrollLeft <= 1);
    frame.classList.toggle('at-end', box.scrollLeft >= overflow - 1);
  }
  function markAllScrolling() {
    document.querySelectorAll('.frame > .scroll').forEach(function (box) {
      if (box.getClientRects().length) markScrolling(box);
    });
  }

  function toggleTheme() {
    var dark = root.dataset.theme ? root.dataset.theme === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
    root.dataset.theme = dark ? 'light' : 'dark';
    remember('guide-theme', root.dataset.theme);
  }

  // Search: a case-insensitive substring over each section of the current language, which
  // works for Chinese as well as English because it needs no word splitting.
  function runSearch() {
    var query = search.value.trim().toLowerCase();
    results.textContent = '';
    results.hidden = !query;
    if (!query) return;
    // Sections whose title matches come first, then the others, each in book order.
    var sections = index[language()];
    var inTitle = function (section) { return section.t.toLowerCase().indexOf(query) >= 0; };
    var shown = 0;
    sections.filter(inTitle).concat(sections.filter(function (section) { return !inTitle(section); })).forEach(function (section) {
      var text = section.t + ' — ' + section.x;
      var at = text.toLowerCase().indexOf(query);
      if (at < 0 || shown >= 40) return;
      shown++;
      var link = document.createElement('a');
      link.href = '#' + language() + '-' + section.id;
      var title = document.createElement('b');
      title.textContent = section.t;
      var where = document.createElement('small');
      where.textContent = section.c;
      var snippet = document.createElement('small');
      var from = Math.max(0, at - 40);
      snippet.append((from > 0 ? '…' : '') + text.slice(from, at));
      var mark = document.createElement('mark');
      mark.textContent = text.slice(at, at + query.length);
      snippet.append(mark, text.slice(at + query.length, at + query.length + 80) + '…');
      link.append(title, where, snippet);
      results.append(link);
    });
    if (!shown) {
      var none = document.createElement('p');
      none.textContent = labels[language()].none;
      results.append(none);
    }
  }

  // The contents entry for a heading id: its own, or for a heading the contents do not list
  // (a ### subsection) that of the nearest listed heading before it.
  function contentsLink(id) {
    var link = function (heading) { return document.querySelector('nav a[href="#' + heading + '"]'); };
    var target = document.getElementById(language() + '-' + id);
    if (!target) return null;
    var headings = Array.prototype.slice.call(headingsOf(language()));
    for (var at = headings.indexOf(target); at >= 0; at--) {
      if (link(headings[at].id)) return link(headings[at].id);
    }
    return null;
  }

  // Highlights the contents entry of the section being read and opens its chapter.
  function markCurrent(given) {
    var id = given || currentSection();
    var marked = document.querySelectorAll('nav a.current, nav li.open');
    for (var i = 0; i < marked.length; i++) marked[i].classList.remove('current', 'open');
    var link = id && contentsLink(id);
    if (!link) link = document.querySelector('nav .toc[data-lang="' + language() + '"] a');
    if (!link) return;
    if (id) link.classList.add('current');
    var chapter = link.closest('.toc > ol > li');
    if (chapter) chapter.classList.add('open');
  }

  document.getElementById('lang-toggle').addEventListener('click', function () {
    setLanguage(language() === 'en' ? 'zh' : 'en', true);
  });
  document.getElementById('theme-toggle').addEventListener('click', toggleTheme);
  document.getElementById('toc-toggle').addEventListener('click', function () {
    document.body.classList.toggle('toc-open');
  });
  document.getElementById('toc').addEventListener('click', function (event) {
    if (event.target.tagName === 'A') document.body.classList.remove('toc-open');
  });
  search.addEventListener('input', runSearch);
  document.querySelectorAll('.frame > .scroll').forEach(function (box) {
    box.addEventListener('scroll', function () { markScrolling(box); }, { passive: true });
  });
  window.addEventListener('resize', function () { fitPlaceholder(); markAllScrolling(); });
  results.addEventListener('click', function (event) {
    if (event.target.closest('a')) { search.value = ''; runSearch(); }
  });
  document.addEventListener('keydown', function (event) {
    if (event.key === '/' && document.activeElement !== search) { event.preventDefault(); search.focus(); }
    if (event.key === 'Escape') { search.value = ''; runSearch(); search.blur(); }
  });
  // A view set by the hash (screenshots, printing) starts the page at a section, or shows one
  // chapter, by leaving out what comes before (and after) it rather than by scrolling: a
  // headless browser's screenshot of a scrolled page is blank.
  function cut(from, onlyChapter) {
    var article = document.querySelector('article');
    for (var node = from; node && node !== article; node = node.parentElement) {
      for (var other = node.previousElementSibling; other; other = other.previousElementSibling) other.classList.add('cut');
      if (onlyChapter && node.parentElement === article) {
        for (other = node.nextElementSibling; other; other = other.nextElementSibling) other.classList.add('cut');
      }
    }
    // A chapter shown alone keeps the title of the part it opens.
    for (other = from.previousElementSibling; onlyChapter && other && other.classList.contains('part-title'); other = other.previousElementSibling) {
      other.classList.remove('cut');
    }
  }
  function uncut() {
    var cutOut = document.querySelectorAll('.cut');
    for (var i = 0; i < cutOut.length; i++) cutOut[i].classList.remove('cut');
  }
  function showMissing(what) {
    results.textContent = '';
    results.hidden = false;
    var note = document.createElement('p');
    note.textContent = labels[language()].missing + what;
    results.append(note);
  }

  // A printed book shows the exercise answers that a reader on screen opens by clicking.
  window.addEventListener('beforeprint', function () {
    document.querySelectorAll('details.solution').forEach(function (box) { box.open = true; });
  });
  window.addEventListener('hashchange', function () {
    var match = /^#(en|zh)-(.+)$/.exec(location.hash);
    uncut();
    markAllScrolling();
    if (!match) return;
    if (match[1] !== language()) setLanguage(match[1], false);
    show(match[2]);
  });
  var scheduled = false;
  window.addEventListener('scroll', function () {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(function () { scheduled = false; markCurrent(); });
  });

  // Whatever happens here, the text must not stay hidden.
  try {
    setLanguage(language(), false);
    var params = new URLSearchParams(location.hash.indexOf('=') > 0 ? location.hash.slice(1) : '');
    var fragment = /^#(en|zh)-(.+)$/.exec(location.hash);
    var headless = /HeadlessChrome/.test(navigator.userAgent);
    var at = params.get('at') || (headless && fragment ? fragment[2] : null), chapter = params.get('chapter');
    var start = null;
    if (chapter) {
      start = document.querySelector('section.chapter[data-file^="' + ('0' + parseInt(chapter, 10)).slice(-2) + '-"]');
      if (!start) showMissing(chapter);
    } else if (at) {
      start = document.getElementById(language() + '-' + at);
      if (!start) showMissing(at);
    }
    if (start && !params.get('at') && fragment) {
      // Said as a view, so the browser's own jump to the fragment does not scroll the page.
      history.replaceState(null, '', '#lang=' + fragment[1] + '&at=' + fragment[2]);
    }
    if (start) {
      cut(start, !!chapter);
      var heading = start.querySelector('[id^="' + language() + '-"]') || start;
      markCurrent(heading.id.slice(3));
      var link = document.querySelector('nav a.current');
      var toc = document.getElementById('toc');
      if (link) toc.scrollTop = Math.max(0, link.offsetTop - toc.clientHeight / 3);
    } else if (fragment) {
      show(fragment[2]);
    } else {
      markCurrent();
    }
    if (params.get('q')) { search.value = params.get('q'); runSearch(); }
  } finally {
    root.classList.remove('cutting');
    markAllScrolling();
  }
})();
