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
export function standardKey(secret: string): Buffer;
export function standardSignature(secret: string, webhookId: string, timestamp: string | number, rawBody: string | Buffer): string;
export type StandardWebhookRefusal = 'missing_headers' | 'invalid_timestamp' | 'timestamp_too_old' | 'timestamp_too_new' | 'no_secret' | 'invalid_signature';
export function verifyStandardWebhook(
  secrets: string | string[] | undefined,
  rawBody: string | Buffer,
  headers: Record<string, string | string[] | undefined>,
  nowSeconds?: number,
): StandardWebhookRefusal | null;
export function createReceiver(options: ReceiverOptions): Server;
