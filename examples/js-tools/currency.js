// The `currency` group: exchange rates from the Frankfurter API (ECB reference rates,
// no API key). It reaches the network only through the host's `fetch`, which the
// gateway's address guard watches; the API's address is a setting, so a test (or a
// self-hosted Frankfurter) can point it elsewhere:
//
//   [tools.javascript.settings.currency]
//   base_url = "https://api.frankfurter.dev/v1"

const DEFAULT_BASE_URL = "https://api.frankfurter.dev/v1";

// GET {base_url}/{path}?{query}; answers the parsed JSON body or throws what went wrong.
async function frankfurter(context, path, query = {}) {
  const base = String(context.settings.base_url ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
  const pairs = Object.entries(query)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${encodeURIComponent(value)}`);
  const url = `${base}/${path}${pairs.length > 0 ? `?${pairs.join("&")}` : ""}`;
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  if (!response.ok) {
    // Frankfurter explains a refusal in {"message": "..."}.
    let reason = response.statusText;
    try {
      reason = (await response.json()).message ?? reason;
    } catch {
      // Not JSON: keep the status text.
    }
    throw new Error(`exchange rate service answered ${response.status} for /${path}: ${reason}`);
  }
  return await response.json();
}

async function convert({ amount, from, to, date }, context) {
  from = from.toUpperCase();
  to = to.toUpperCase();
  if (from === to) {
    return { amount, from, to, rate: 1, result: amount, date: date ?? null };
  }
  const answer = await frankfurter(context, date ?? "latest", { base: from, symbols: to });
  const rate = answer.rates?.[to];
  if (typeof rate !== "number") {
    throw new Error(`no ${from}/${to} rate in the answer for ${answer.date ?? date ?? "latest"}`);
  }
  // Money: rounded to the cent (and rates to 6 places), as the ECB publishes them.
  return {
    amount,
    from,
    to,
    rate,
    result: Math.round(amount * rate * 100) / 100,
    date: answer.date,
  };
}

async function rates({ base = "EUR", symbols, date }, context) {
  const answer = await frankfurter(context, date ?? "latest", {
    base: base.toUpperCase(),
    symbols: symbols?.map((symbol) => symbol.toUpperCase()).join(","),
  });
  return { base: answer.base, date: answer.date, rates: answer.rates };
}

async function currencies(_args, context) {
  return { currencies: await frankfurter(context, "currencies") };
}
