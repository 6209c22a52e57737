import { a, b } from "./lib";
import * as path from 'node:path';
import def from "../shared/util.js";
export * from "./reexport";
const lazy = await import("./lazy");

/** Greeter greets. */
export default class Greeter<T extends { name: string }> extends Base implements IGreeter {
  private readonly prefix: string = "hi";
  static count = 0;
  #secret = 1;

  constructor(private name: string) {
    super();
  }

  /** Greets someone. */
  greet<U>(who: U,
           loud?: boolean): Promise<string> {
    return `${this.prefix} ${who} ${`nested ${"}"}`}`;
  }

  get size(): number { return 1 }

  handle = async (e: Event): Promise<void> => {
    console.log(e);
  };

  abstract render(): void;
}

export interface Shape<T = {}> {
  area(): number;
  readonly sides: number;
}

export type Handler<E> = (event: E) => void;
type Union =
  | "a"
  | "b";

export enum Color { Red, Green }
const enum Dir { Up }

export namespace Geometry.Plane {
  export function dist(p: Point): number { return 0 }
}

declare module "ext" {
  function extFn(): void;
}

export const add = (a: number, b: number): number => a + b;
export const mul = <T,>(x: T): T => x
const re = /[{}]\/"/g, other = 2
let counter = 0;
export function overload(a: string): string;
export function overload(a: any): any {
  return a;
}
export default function () {}
function* gen() { yield 1 }
export const obj = {
  method() { return 1 },
};
