/* A fixed-size byte ring buffer for a UART driver. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "ring_buffer.h"

#define RING_CAPACITY 256
#define RING_NEXT(i) (((i) + 1) % RING_CAPACITY)

typedef struct ring {
    uint8_t data[RING_CAPACITY];
    size_t head;
    size_t tail;
} ring_t;

enum ring_status {
    RING_OK,
    RING_FULL,
    RING_EMPTY,
};

static const char *status_names[] = {
    "ok",
    "full",
    "empty",
};

/** Puts one byte into the ring; fails when it is full. */
enum ring_status ring_put(ring_t *ring, uint8_t byte)
{
    size_t next = RING_NEXT(ring->head);
    if (next == ring->tail) {
        return RING_FULL;
    }
    ring->data[ring->head] = byte;
    ring->head = next;
    return RING_OK;
}

enum ring_status ring_get(ring_t *ring, uint8_t *out)
{
    if (ring->head == ring->tail) {
        return RING_EMPTY;
    }
    *out = ring->data[ring->tail];
    ring->tail = RING_NEXT(ring->tail);
    return RING_OK;
}

size_t ring_drain(ring_t *ring, uint8_t *dst, size_t max)
{
    size_t n = 0;
    while (n < max && ring_get(ring, &dst[n]) == RING_OK) {
        n++;
    }
    return n;
}

const char *ring_status_name(enum ring_status status)
{
    // Unknown values come from corrupted memory; say so.
    switch (status) {
    case RING_OK:
    case RING_FULL:
    case RING_EMPTY:
        return status_names[status];
    default:
        return "corrupt";
    }
}
