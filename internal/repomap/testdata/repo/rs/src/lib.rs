mod net;
use crate::net::fetch_all;

pub fn run() { fetch_all(); }
