// A filterable to-do list component.
import React, { useMemo, useState } from "react";
import { TodoItem } from "./TodoItem";

export interface Todo {
  id: number;
  title: string;
  done: boolean;
}

type Filter = "all" | "open" | "done";

const FILTERS: Filter[] = ["all", "open", "done"];

/**
 * Shows the to-dos that match the chosen filter.
 */
export function TodoList({ todos }: { todos: Todo[] }) {
  const [filter, setFilter] = useState<Filter>("all");
  const visible = useMemo(() => {
    switch (filter) {
      case "open":
        return todos.filter((t) => !t.done);
      case "done":
        return todos.filter((t) => t.done);
      default:
        return todos;
    }
  }, [todos, filter]);

  return (
    <section className="todo-list">
      <nav>
        {FILTERS.map((f) => (
          <button key={f} disabled={f === filter} onClick={() => setFilter(f)}>
            {f}
          </button>
        ))}
      </nav>
      <ul>
        {visible.map((todo) => (
          <TodoItem key={todo.id} todo={todo} />
        ))}
      </ul>
    </section>
  );
}

export default TodoList;
