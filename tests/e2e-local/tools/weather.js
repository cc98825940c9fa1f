// Deterministic forecasts for the end-to-end suite: the same answer on every run.
const FORECASTS = {
  oslo: { city: "Oslo", low_c: -3, high_c: 2, sky: "light snow" },
  bergen: { city: "Bergen", low_c: 4, high_c: 9, sky: "rain" },
  lisbon: { city: "Lisbon", low_c: 13, high_c: 21, sky: "sunny" },
};

function known(city) {
  const forecast = FORECASTS[String(city).trim().toLowerCase()];
  if (forecast === undefined) {
    throw new Error(`no forecast for '${city}': known cities are Oslo, Bergen and Lisbon`);
  }
  return forecast;
}

function forecast({ city }) {
  return known(city);
}

function alerts({ city }) {
  const { city: name } = known(city);
  return name === "Bergen" ? { city: name, alerts: ["flood warning until Friday"] } : { city: name, alerts: [] };
}
