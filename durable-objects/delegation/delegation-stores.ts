import { Activation } from "../store/activation";
import type { SessionStores } from "../store/session-stores";

/**
 * The stores of delegation tables that store/session-stores.ts does not hold as fields yet, one
 * set per session's stores (built on first use, over the same first-use tables). Once
 * session-stores.ts holds them, their users read them there and this file goes.
 */
export interface DelegationStores {
  /** A continuable child's current epoch (store/activation.ts). */
  activation: Activation;
}

const built = new WeakMap<SessionStores, DelegationStores>();

export function delegationStores(stores: SessionStores): DelegationStores {
  let found = built.get(stores);
  if (!found) {
    found = { activation: new Activation(stores.tables.sql("activation")) };
    built.set(stores, found);
  }
  return found;
}
