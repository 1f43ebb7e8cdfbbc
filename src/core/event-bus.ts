import { EventEmitter } from 'node:events';

export interface PublishedEvent {
  id: string;
  object: 'event';
  type: string;
  createdAt: string;
  livemode: boolean;
  accountId: string;
  data: { object: Record<string, unknown> };
}

/** In-process fan-out of committed events (GraphQL subscriptions, workers wake-up). */
export class EventBus {
  private readonly emitter = new EventEmitter();
  constructor() {
    this.emitter.setMaxListeners(0);
  }
  publish(event: PublishedEvent): void {
    this.emitter.emit('event', event);
  }
  subscribe(listener: (event: PublishedEvent) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }
}
