// A deterministic calendar for the end-to-end suite.
const EVENTS = { "2026-03-02": ["09:30 stand-up", "14:00 budget review with Finance"] };

function events({ date }) {
  return { date, events: EVENTS[String(date).trim()] ?? [] };
}
