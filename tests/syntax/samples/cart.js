// Shopping cart state shared by the checkout pages.
import { formatPrice } from "./currency.js";
const storage = require("./storage");

const TAX_RATE = 0.2;
const DEFAULT_OPTIONS = {
  currency: "EUR",
  persist: true,
};

/**
 * A cart of line items, persisted between visits.
 */
export class Cart {
  #items = new Map();

  constructor(options = DEFAULT_OPTIONS) {
    this.options = { ...DEFAULT_OPTIONS, ...options };
  }

  add(sku, price, quantity = 1) {
    const line = this.#items.get(sku) ?? { sku, price, quantity: 0 };
    line.quantity += quantity;
    this.#items.set(sku, line);
    if (this.options.persist) {
      storage.save("cart", [...this.#items.values()]);
    }
    return line;
  }

  total() {
    let sum = 0;
    for (const line of this.#items.values()) {
      sum += line.price * line.quantity;
    }
    return sum * (1 + TAX_RATE);
  }
}

export function renderTotal(cart, element) {
  const text = `Total: ${formatPrice(cart.total())}`;
  element.textContent = text;
  switch (cart.options.currency) {
    case "EUR":
      element.classList.add("eur");
      break;
    default:
      element.classList.remove("eur");
  }
}

const debounce = (fn, wait) => {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), wait);
  };
};

export const CartBadge = ({ count }) => <span className="badge">{count}</span>;
