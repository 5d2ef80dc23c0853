import type { NodeVote } from '../errors';
import type { OwnerClaim } from '../lock';
import type { NodeGroup } from '../nodes';

/** What an acquisition works with beyond its nodes: the retry policy. Values only, built once per instance. */
export interface AcquirePlan extends NodeGroup {
  readonly retryDelay: number;
  readonly maxRetryDelay: number;
  /** Returns a number in [0, 1): backoff jitter. */
  readonly random: () => number;
  /** @internal Test-only (negative controls): hand out locks even when no validity is left. */
  readonly unsafeSkipValidityCheck: boolean;
  /**
   * @internal Test-only (negative control of docs/DESIGN.md §7): every attempt of an acquisition reuses the
   * first attempt's owner value, as the code did before per-attempt owners.
   */
  readonly unsafeReuseOwner: boolean;
}

/** The result of one acquisition attempt. */
export type Attempt =
  | { readonly kind: 'acquired'; readonly deadline: number; readonly token: number | undefined }
  | {
      readonly kind: 'busy' | 'unavailable';
      readonly votes: NodeVote[];
      readonly holderTtl: number | undefined;
      readonly detail?: string;
    }
  | { readonly kind: 'expired'; readonly votes: NodeVote[]; readonly elapsed: number };

/** How one acquisition ended, and how its waits between attempts ended (for `stats`). */
export type AcquisitionResult = (
  | {
      readonly kind: 'acquired';
      readonly attempt: Extract<Attempt, { kind: 'acquired' }>;
      readonly attempts: number;
      /** The winning attempt's owner value (each attempt has its own, docs/DESIGN.md §7) and its claim. */
      readonly owner: string;
      readonly claim: OwnerClaim;
    }
  | {
      readonly kind: 'failed';
      readonly attempt: Exclude<Attempt, { kind: 'acquired' }>;
      readonly attempts: number;
      readonly elapsed: number;
    }
) & { readonly wokenByRelease: number; readonly wokenByTimer: number };
