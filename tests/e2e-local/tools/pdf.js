// One deterministic document for the end-to-end suite.
const DOCUMENT = {
  path: "reports/q3.pdf",
  title: "Third Quarter Report",
  author: "Finance Team",
  pages: ["Revenue grew 12% to 4.2 million euros.", "Costs fell 3%.", "Outlook: hiring in Lisbon."],
};

function open(path) {
  const wanted = String(path).replace(/^\.?\//, "");
  if (wanted !== DOCUMENT.path) {
    throw new Error(`no such file: ${path} (the only file is ${DOCUMENT.path})`);
  }
  return DOCUMENT;
}

function info({ path }) {
  const document = open(path);
  return { path: document.path, pages: document.pages.length, title: document.title, author: document.author };
}

function extractText({ path, page }) {
  const document = open(path);
  if (!(page >= 1 && page <= document.pages.length)) {
    throw new Error(`page ${page} is out of range: the file has ${document.pages.length} pages`);
  }
  return document.pages[page - 1];
}

function search({ path, query }) {
  const document = open(path);
  const needle = String(query).toLowerCase();
  const pages = document.pages.flatMap((text, index) => (text.toLowerCase().includes(needle) ? [index + 1] : []));
  return { query, pages };
}
