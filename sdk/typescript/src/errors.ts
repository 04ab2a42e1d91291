// errors.ts: the error codes of docs/errors.md and the errors an agent's
// execute function throws to choose its task's outcome.

/** Error codes a task's result carries (docs/errors.md). */
export const Codes = {
  invalidInput: "invalid_input",
  invalidParams: "invalid_params",
  malformedEvent: "malformed_event",
  timeout: "timeout",
  cancelled: "cancelled",
  agentError: "agent_error",
  notFound: "not_found",
  unavailable: "unavailable",
  retriesExhausted: "retries_exhausted",
  unknownAgent: "unknown_agent",
  tooLarge: "too_large",
  callDepth: "call_depth",
  callFanout: "call_fanout",
  limitExceeded: "limit_exceeded",
  budgetExceeded: "budget_exceeded",
  forbidden: "forbidden",
  inputRequired: "input_required",
  approvalRequired: "approval_required",
  stepTooLarge: "step_too_large",
} as const;

/**
 * MeshError is an error with a mesh error code. Thrown from an agent's
 * execute function, it fails the task with that code; a failed result a
 * client or an agent-to-agent call receives is thrown as one.
 */
export class MeshError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  constructor(code: string, message: string, retryable = false) {
    super(message);
    this.name = "MeshError";
    this.code = code;
    this.retryable = retryable;
  }
}

/**
 * RetryableError asks for another try: on the durable path the task is
 * redelivered with back-off (1 s, 5 s, 15 s) and dead-lettered with
 * retries_exhausted after its last delivery; on the direct path it is
 * answered at once as unavailable, retryable.
 */
export class RetryableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RetryableError";
  }
}

/** The micro error code (Nats-Service-Error-Code) of a mesh error code. */
export function serviceErrorCode(code: string): number {
  switch (code) {
    case Codes.malformedEvent:
    case Codes.invalidInput:
    case Codes.invalidParams:
      return 400;
    case Codes.notFound:
      return 404;
    case Codes.cancelled:
      return 499;
    case Codes.unavailable:
      return 503;
    case Codes.timeout:
      return 504;
    default:
      return 500;
  }
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
