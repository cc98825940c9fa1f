// Deterministic stock levels for the end-to-end suite.
const STOCK = { stapler: 37, "paper ream": 120, "toner cartridge": 4 };

function count({ item }) {
  const key = String(item).trim().toLowerCase().replace(/s$/, "");
  if (!(key in STOCK)) {
    throw new Error(`unknown item '${item}': the items are ${Object.keys(STOCK).join(", ")}`);
  }
  return { item: key, in_stock: STOCK[key] };
}

function reorder({ item, quantity }) {
  const { item: key } = count({ item });
  return { item: key, ordered: quantity, order_id: `PO-${key.length}${quantity}` };
}
