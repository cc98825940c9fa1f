// The `calc` group: pure computation, nothing of the host used. Each function gets the
// call's arguments (already checked against the schema in calc.json) as one object and
// returns a value; a thrown Error becomes an error result naming its line.

// Every unit, by symbol, as its dimension and its size in that dimension's base unit
// (metre, kilogram, litre, square metre, metre per second, second, byte).
const UNITS = {
  length: {
    m: 1, km: 1000, cm: 0.01, mm: 0.001, um: 1e-6, nm: 1e-9,
    mi: 1609.344, yd: 0.9144, ft: 0.3048, in: 0.0254, nmi: 1852,
  },
  mass: {
    kg: 1, g: 0.001, mg: 1e-6, t: 1000, lb: 0.45359237, oz: 0.028349523125, st: 6.35029318,
  },
  volume: {
    l: 1, ml: 0.001, cl: 0.01, dl: 0.1, m3: 1000, cm3: 0.001,
    gal: 3.785411784, qt: 0.946352946, pt: 0.473176473, cup: 0.2365882365, fl_oz: 0.0295735295625,
    imp_gal: 4.54609, imp_pt: 0.56826125,
  },
  area: {
    m2: 1, km2: 1e6, cm2: 1e-4, ha: 1e4, acre: 4046.8564224, ft2: 0.09290304, in2: 0.00064516,
    mi2: 2589988.110336,
  },
  speed: {
    "m/s": 1, "km/h": 1000 / 3600, mph: 1609.344 / 3600, kn: 1852 / 3600, "ft/s": 0.3048,
  },
  time: {
    ms: 0.001, s: 1, min: 60, h: 3600, d: 86400, wk: 604800,
  },
  data: {
    B: 1, kB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3,
    TiB: 1024 ** 4, bit: 1 / 8,
  },
};

// Temperatures are affine: each unit as [scale, offset] to kelvin (K = value * scale + offset).
const TEMPERATURES = {
  K: [1, 0],
  C: [1, 273.15],
  F: [5 / 9, 273.15 - (32 * 5) / 9],
};

function dimensionOf(unit) {
  if (Object.hasOwn(TEMPERATURES, unit)) return "temperature";
  for (const [dimension, units] of Object.entries(UNITS)) {
    if (Object.hasOwn(units, unit)) return dimension;
  }
  const known = [...Object.keys(TEMPERATURES), ...Object.values(UNITS).flatMap(Object.keys)];
  throw new Error(`unknown unit '${unit}'; known units: ${known.join(", ")}`);
}

// Rounds away binary noise (0.1 + 0.2) without hiding real digits.
function tidy(value) {
  return Number(value.toPrecision(12));
}

function convertUnits({ value, from, to }) {
  const dimension = dimensionOf(from);
  const target = dimensionOf(to);
  if (dimension !== target) {
    throw new Error(`cannot convert ${dimension} (${from}) to ${target} (${to})`);
  }
  let result;
  if (dimension === "temperature") {
    const [scaleFrom, offsetFrom] = TEMPERATURES[from];
    const [scaleTo, offsetTo] = TEMPERATURES[to];
    const kelvin = value * scaleFrom + offsetFrom;
    if (kelvin < -1e-9) {
      throw new Error(`${value} ${from} is below absolute zero`);
    }
    result = (kelvin - offsetTo) / scaleTo;
  } else {
    result = (value * UNITS[dimension][from]) / UNITS[dimension][to];
  }
  return { value, from, to, result: tidy(result), dimension };
}

// The p-th percentile of sorted values, interpolating linearly between ranks (as
// numpy's default and spreadsheets' PERCENTILE.INC do).
function percentile(sorted, p) {
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low] + (sorted[high] - sorted[low]) * (rank - low);
}

function statistics({ numbers, percentiles = [25, 50, 75, 90, 99] }) {
  if (numbers.length === 0) throw new Error("`numbers` is empty");
  const sorted = [...numbers].sort((a, b) => a - b);
  const count = sorted.length;
  // Kahan summation: long lists of small values keep their digits.
  let sum = 0;
  let carry = 0;
  for (const x of sorted) {
    const y = x - carry;
    const t = sum + y;
    carry = t - sum - y;
    sum = t;
  }
  const mean = sum / count;
  const squares = sorted.reduce((total, x) => total + (x - mean) ** 2, 0);
  const result = {
    count,
    sum: tidy(sum),
    min: sorted[0],
    max: sorted[count - 1],
    mean: tidy(mean),
    median: tidy(percentile(sorted, 50)),
    stdev_population: tidy(Math.sqrt(squares / count)),
    stdev_sample: count > 1 ? tidy(Math.sqrt(squares / (count - 1))) : null,
    percentiles: {},
  };
  for (const p of percentiles) {
    result.percentiles[`p${p}`] = tidy(percentile(sorted, p));
  }
  return result;
}

const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const DAY_MS = 86400000;

// A YYYY-MM-DD date as [year, month (1-12), day], refusing dates that do not exist.
function parseDate(text) {
  const [year, month, day] = text.split("-").map(Number);
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) {
    throw new Error(`'${text}' is not a calendar date`);
  }
  return [year, month, day];
}

function daysInMonth(year, month) {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

// Days since 1970-01-01 of a date.
function dayNumber([year, month, day]) {
  return Date.UTC(year, month - 1, day) / DAY_MS;
}

function describe(days) {
  const date = new Date(days * DAY_MS);
  return {
    date: date.toISOString().slice(0, 10),
    weekday: WEEKDAYS[date.getUTCDay()],
  };
}

function dateAdd({ date, years = 0, months = 0, weeks = 0, days = 0 }) {
  const [year, month, day] = parseDate(date);
  // Months first (clamping the day to the month's length), then days.
  const monthIndex = year * 12 + (month - 1) + years * 12 + months;
  const newYear = Math.floor(monthIndex / 12);
  const newMonth = monthIndex - newYear * 12 + 1;
  const newDay = Math.min(day, daysInMonth(newYear, newMonth));
  const result = dayNumber([newYear, newMonth, newDay]) + weeks * 7 + days;
  if (!Number.isFinite(result) || Math.abs(result) > 1e8) {
    throw new Error("the result is outside the supported range of dates");
  }
  return describe(result);
}

// Weekdays (Monday to Friday) in the half-open range [start, end) of day numbers.
function weekdaysBetween(start, end) {
  const whole = Math.floor((end - start) / 7);
  let count = whole * 5;
  for (let day = start + whole * 7; day < end; day++) {
    // 1970-01-01 was a Thursday (4).
    const weekday = (((day + 4) % 7) + 7) % 7;
    if (weekday !== 0 && weekday !== 6) count++;
  }
  return count;
}

function dateDiff({ from, to }) {
  const first = parseDate(from);
  const second = parseDate(to);
  const start = dayNumber(first);
  const end = dayNumber(second);
  const sign = end < start ? -1 : 1;
  const [early, late] = sign < 0 ? [second, first] : [first, second];
  // Whole months from the earlier date, then the days left over.
  let months = (late[0] - early[0]) * 12 + (late[1] - early[1]);
  if (late[2] < early[2]) months--;
  const anchor = dateAdd({ date: formatDate(early), months });
  const rest = dayNumber(late) - dayNumber(parseDate(anchor.date));
  return {
    from,
    to,
    days: end - start,
    weeks: tidy((end - start) / 7),
    weekdays: sign * weekdaysBetween(Math.min(start, end), Math.max(start, end)),
    span: {
      years: sign * Math.floor(months / 12),
      months: sign * (months % 12),
      days: sign * rest,
    },
  };
}

function formatDate([year, month, day]) {
  const pad = (n, width) => String(n).padStart(width, "0");
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`;
}
