import type { Server } from 'node:https';

export interface ReceivedEventInfo {
  eventId: string;
  attempt: number;
  duplicate: boolean;
}

export interface ReceiverOptions {
  /** One secret, or several while rotating. */
  secret: string | string[] | undefined;
  cert: string | Buffer;
  key: string | Buffer;
  onEvent?: (event: any, info: ReceivedEventInfo) => void;
}

export function signPayload(secret: string, rawBody: string | Buffer): string;
export function verifySignature(secret: string | undefined, rawBody: string | Buffer, header: string | undefined): boolean;
export function createReceiver(options: ReceiverOptions): Server;
