#include "price.h"

price_t total_price(const price_t *prices, int n) {
    price_t sum = 0;
    for (int i = 0; i < n; i++) sum += prices[i];
    return sum;
}
