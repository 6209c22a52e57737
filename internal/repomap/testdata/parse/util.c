#include "util.h"
#include <stdio.h>

#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define LONG_MACRO(x) do { \
    if (x) { \
    } while (0)

/* A counter. */
static const int LIMIT = 10;

typedef struct node {
    int value;
    struct node *next;
} node_t;

typedef int (*callback)(void *ctx, int n);

struct point { int x, y; };

enum color { RED, GREEN };

/**
 * Sums a list.
 */
int sum(const node_t *list,
        int limit)
{
#ifdef FAST
    return fast_sum(list);
#else
    return slow_sum(list); }
#endif
}

static struct point *make_point(int x, int y) {
    return NULL;
}

void declared_only(int);

int main(int argc, char **argv) { return 0; }
