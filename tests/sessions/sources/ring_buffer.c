/* A fixed-size ring buffer of bytes for a serial driver. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct ring_buffer {
    uint8_t *data;
    size_t capacity;
    size_t head;
    size_t tail;
    size_t count;
};

void ring_init(struct ring_buffer *rb, uint8_t *storage, size_t capacity)
{
    rb->data = storage;
    rb->capacity = capacity;
    rb->head = 0;
    rb->tail = 0;
    rb->count = 0;
}

size_t ring_write(struct ring_buffer *rb, const uint8_t *src, size_t len)
{
    size_t written = 0;
    while (written < len && rb->count < rb->capacity) {
        rb->data[rb->head] = src[written++];
        rb->head = (rb->head + 1) % rb->capacity;
        rb->count++;
    }
    return written;
}

size_t ring_read(struct ring_buffer *rb, uint8_t *dst, size_t len)
{
    size_t read = 0;
    while (read < len && rb->count > 0) {
        dst[read++] = rb->data[rb->tail];
        rb->tail = (rb->tail + 1) % rb->capacity;
        rb->count--;
    }
    return read;
}

size_t ring_peek(const struct ring_buffer *rb, uint8_t *dst, size_t len)
{
    size_t n = len < rb->count ? len : rb->count;
    for (size_t i = 0; i < n; i++)
        dst[i] = rb->data[(rb->tail + i) % rb->capacity];
    return n;
}
