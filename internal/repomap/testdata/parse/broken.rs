fn good() -> i32 { 1 }
fn bad(x: i32 {
    let y = ;
struct After { a: u8 }
