#ifndef PRICE_H
#define PRICE_H
/* Price in cents. */
typedef long price_t;
price_t total_price(const price_t *prices, int n);
#endif
