package com.example.shop.orders;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Places and cancels orders against the stock repository.
 */
public class OrderService {
    private static final int MAX_LINES = 50;

    private final StockRepository stock;
    private final List<Order> placed = new ArrayList<>();

    public OrderService(StockRepository stock) {
        this.stock = stock;
    }

    public Order place(String customer, List<OrderLine> lines) {
        if (lines.size() > MAX_LINES) {
            throw new IllegalArgumentException("too many lines: " + lines.size());
        }
        for (OrderLine line : lines) {
            // Reserve first so that a failure leaves nothing half-booked.
            stock.reserve(line.sku(), line.quantity());
        }
        Order order = new Order(customer, lines, Instant.now());
        placed.add(order);
        return order;
    }

    public Optional<Order> find(String id) {
        return placed.stream().filter(o -> o.id().equals(id)).findFirst();
    }

    public String describe(Order order) {
        switch (order.status()) {
            case OPEN:
                return "open since " + order.created();
            case CANCELLED:
                return "cancelled";
            default:
                return "unknown";
        }
    }

    interface StockRepository {
        void reserve(String sku, int quantity);
    }

    record OrderLine(String sku, int quantity) {}

    enum Status {
        OPEN,
        CANCELLED
    }
}
