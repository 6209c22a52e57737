/// Fetches everything.
pub fn fetch_all() {}
