// A typed publish/subscribe bus for application events.
export type Listener<T> = (payload: T) => void;

export interface Subscription {
  unsubscribe(): void;
}

export class EventBus<Events extends Record<string, unknown>> {
  private listeners = new Map<keyof Events, Set<Listener<any>>>();

  on<K extends keyof Events>(event: K, listener: Listener<Events[K]>): Subscription {
    let set = this.listeners.get(event);
    if (!set) {
      set = new Set();
      this.listeners.set(event, set);
    }
    set.add(listener);
    return { unsubscribe: () => set!.delete(listener) };
  }

  once<K extends keyof Events>(event: K, listener: Listener<Events[K]>): Subscription {
    const subscription = this.on(event, (payload) => {
      subscription.unsubscribe();
      listener(payload);
    });
    return subscription;
  }

  emit<K extends keyof Events>(event: K, payload: Events[K]): number {
    const set = this.listeners.get(event);
    if (!set) {
      return 0;
    }
    for (const listener of [...set]) {
      listener(payload);
    }
    return set.size;
  }

  listenerCount(event: keyof Events): number {
    return this.listeners.get(event)?.size ?? 0;
  }
}
