//! Crate docs.
use std::collections::HashMap;
use crate::util::{self, helper};
mod util;
pub mod net {
    pub fn connect() {}
}

/// A point.
#[derive(Debug, Clone)]
pub struct Point<T> {
    x: T,
    y: T,
}

pub struct Unit;
struct Tuple(i32, String);

pub enum Shape {
    Circle { r: f64 },
    Square(f64),
}

/// Things that draw.
pub trait Draw: Sized {
    type Output;
    const SIDES: u32 = 0;
    fn draw(&self) -> Self::Output;
    fn name(&self) -> &'static str { "shape" }
}

impl<T: std::fmt::Display> std::fmt::Display for Point<T>
where
    T: Clone,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}

impl<T> Point<T> {
    /// Makes a point.
    pub const fn new(x: T, y: T) -> Self {
        Point { x, y }
    }

    pub(crate) async unsafe fn weird<'a, F>(&'a self, f: F) -> Option<&'a T>
    where
        F: Fn(&T) -> bool,
        T: Iterator<Item = u8>,
    {
        let c = '{';
        let s = r#"}"#;
        None
    }
}

pub type Map<K> = HashMap<K, Vec<u8>>;
pub const LIMIT: usize = 10;
static mut COUNTER: u32 = 0;

macro_rules! square {
    ($x:expr) => { $x * $x };
}

extern "C" {
    fn abs(x: i32) -> i32;
}

fn generic<'a, T>(x: &'a T) -> &'a T where T: ?Sized { x }
