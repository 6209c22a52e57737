export interface Item { id: number; name: string }

export async function fetchItems(base: string): Promise<Item[]> {
  return [];
}
