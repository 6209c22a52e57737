import { fetchItems, Item } from "./lib/client";

export default function App() {
  const items: Item[] = [];
  fetchItems("/api");
  return null;
}
