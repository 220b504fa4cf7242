// Runs jobs with a bounded number in flight.
import { EventEmitter } from "events";
import type { Logger } from "./logger";

export const MAX_CONCURRENCY = 4;

export interface Job<T> {
  id: string;
  run(signal: AbortSignal): Promise<T>;
}

export type JobState = "queued" | "running" | "done" | "failed";

enum Priority {
  Low,
  High,
}

/**
 * Schedules jobs in priority order.
 */
export class Scheduler<T> extends EventEmitter implements Disposable {
  private readonly queue: Array<Job<T>> = [];
  private running = 0;

  constructor(private readonly logger: Logger, private limit = MAX_CONCURRENCY) {
    super();
  }

  submit(job: Job<T>, priority: Priority = Priority.Low): void {
    if (priority === Priority.High) {
      this.queue.unshift(job);
    } else {
      this.queue.push(job);
    }
    this.pump();
  }

  private pump(): void {
    while (this.running < this.limit && this.queue.length > 0) {
      const job = this.queue.shift()!;
      this.running++;
      const controller = new AbortController();
      job
        .run(controller.signal)
        .then((result) => this.emit("done", job.id, result))
        .catch((error: Error) => this.logger.error(`job ${job.id} failed`, error))
        .finally(() => {
          this.running--;
          this.pump();
        });
    }
  }

  [Symbol.dispose](): void {
    this.queue.length = 0;
  }
}

export function createScheduler<T>(logger: Logger): Scheduler<T> {
  return new Scheduler<T>(logger);
}
