// Opens toolgate's status page in a real headless Chromium (the browser the npm package
// @sparticuz/chromium ships, driven by puppeteer-core) and prints what it shows as JSON:
// the HTTP status, the title, the figures of the cards, the group rows, the charts' last
// points and sizes, and every console error, failed request and page error.
//
//     TOOLGATE_PEERS_NODE_MODULES=.peers/node/node_modules \
//       node tests/browser/status_page.mjs http://127.0.0.1:8848 [token]
//
// The packages come from the test peers' node_modules (scripts/install-peers). The caller
// compares the figures with /metrics; this script only reads the page.

import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [base, token] = process.argv.slice(2);
const modules = process.env.TOOLGATE_PEERS_NODE_MODULES;
if (!base || !modules) {
  console.error("usage: TOOLGATE_PEERS_NODE_MODULES=DIR status_page.mjs BASE_URL [TOKEN]");
  process.exit(2);
}
const resolve = createRequire(`${modules}/`).resolve;
const load = async (name) => (await import(pathToFileURL(resolve(name)).href)).default;
const chromium = await load("@sparticuz/chromium");
const puppeteer = await load("puppeteer-core");

const browser = await puppeteer.launch({
  args: chromium.args,
  executablePath: await chromium.executablePath(),
  headless: true,
});
try {
  const page = await browser.newPage();
  const problems = [];
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warn") {
      problems.push(`console ${message.type()}: ${message.text()}`);
    }
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error}`));
  page.on("requestfailed", (request) => problems.push(`request failed: ${request.url()}`));
  if (token) {
    await page.setExtraHTTPHeaders({ authorization: `Bearer ${token}` });
  }
  const response = await page.goto(`${base}/`, { waitUntil: "load", timeout: 30000 });
  const shown = await page.evaluate(() => {
    const number = (text) => Number(String(text).trim());
    const box = (element) => {
      const rect = element?.getBoundingClientRect();
      return rect ? { width: rect.width, height: rect.height } : null;
    };
    return {
      title: document.title,
      heading: document.querySelector("h1")?.textContent ?? "",
      figures: Object.fromEntries(
        [...document.querySelectorAll("[data-metric]")].map((e) => [e.dataset.metric, number(e.textContent)]),
      ),
      groups: Object.fromEntries(
        [...document.querySelectorAll("#groups tr[data-group]")].map((row) => [
          row.dataset.group,
          {
            loads: number(row.querySelector("[data-loads]").textContent),
            tools: row.cells[5].textContent,
          },
        ]),
      ),
      upstreams: [...document.querySelectorAll("#upstreams tr")].slice(1).map((row) => [
        row.cells[0].textContent,
        row.cells[1].textContent,
      ]),
      charts: Object.fromEntries(
        [...document.querySelectorAll("svg[id^=chart-]")].map((svg) => [
          svg.id,
          {
            last: number(svg.querySelector("[data-last]")?.dataset.last),
            points: (svg.querySelector("polyline")?.getAttribute("points") ?? "").split(" ").filter(Boolean).length,
            box: box(svg),
          },
        ]),
      ),
    };
  });
  console.log(JSON.stringify({ status: response.status(), problems, ...shown }));
} finally {
  await browser.close();
}
