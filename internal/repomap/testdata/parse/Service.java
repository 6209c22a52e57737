package com.example.app;

import java.util.List;
import static java.util.Objects.requireNonNull;
import com.example.app.model.*;

/**
 * Service does work.
 */
@Component
@SuppressWarnings({"unchecked", "rawtypes"})
public final class Service<T extends Comparable<T>> extends Base implements Runnable {
    public static final int MAX = 10;
    private static final String NAME = "svc";
    private final List<T> items = new ArrayList<>();

    /** Creates a service. */
    public Service(List<T> items) {
        this.items = items;
    }

    @Override
    public void run() {
        Runnable r = new Runnable() {
            public void run() {}
        };
    }

    // Finds things.
    public <R> List<R> find(String query,
                            int limit) throws IOException, InterruptedException {
        return null;
    }

    static class Node<K> {
        K key;
        Node<K> next() { return null; }
    }

    enum State {
        IDLE, RUNNING("r") {
            void x() {}
        };
        State() {}
        State(String s) {}
        boolean active() { return this == RUNNING; }
    }

    interface Listener {
        void onEvent(String e);
        default void close() {}
    }

    record Point(int x, int y) {
        Point {
            if (x < 0) throw new IllegalArgumentException();
        }
        int sum() { return x + y; }
    }

    @interface Marker {
        String value() default "";
    }

    static {
        System.out.println("init");
    }
}
