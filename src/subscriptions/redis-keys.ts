// Names of what cross-replica listen keeps in Redis, under store.keyPrefix (P) and with the
// session key id as the Cluster hash tag ({ID}, escaped as in pool/store/redis-store.ts), so every
// script touches one slot:
//
//   P listen-holder:{ID}     string  token of the channel holding the session's GET stream; PX lease TTL.
//   P listen-uris:{ID}       hash    "<channel token> <uri>" -> that channel's count of listeners on uri.
//   P listen-channels:{ID}   zset    channel token -> when its liveness expires (Redis time, ms).
//   P listen-cursor:{ID}     string  "<session mark> <event id>": the last GET-stream event the holder handed on.
//   P session-events:{ID}    pub/sub the session's change notifications (and holder hand-overs).
//   P session-facts          pub/sub "this session's facts are stale after this change", to every replica.

/** `{`, `}` and `%` escaped, so the id is one whole hash tag and no two ids collide. */
export function hashTag(id: string): string {
  return id.replace(/%/g, '%25').replace(/\{/g, '%7B').replace(/\}/g, '%7D');
}

export interface ListenKeys {
  holder: string;
  uris: string;
  channels: string;
  cursor: string;
}

export function listenKeys(prefix: string, keyId: string): ListenKeys {
  const tag = `{${hashTag(keyId)}}`;
  return {
    holder: `${prefix}listen-holder:${tag}`,
    uris: `${prefix}listen-uris:${tag}`,
    channels: `${prefix}listen-channels:${tag}`,
    cursor: `${prefix}listen-cursor:${tag}`,
  };
}

export function sessionEventsChannel(prefix: string, keyId: string): string {
  return `${prefix}session-events:{${hashTag(keyId)}}`;
}

export function factsChannel(prefix: string): string {
  return `${prefix}session-facts`;
}
