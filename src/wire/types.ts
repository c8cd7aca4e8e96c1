// The service's wire shapes (service-interface.md 1.3.0, section 2), shared by the client and the sandbox.

export const SERVICE_INTERFACE_VERSION = '1.3.0';

/** Countries named by the description (section 8); the full list is "not shown". */
export const DESCRIBED_COUNTRIES = ['US', 'GB', 'DE', 'IE', 'BE', 'NZ', 'ES', 'AU'] as const;
/** Countries whose lookups only exist in webhook mode (section 8). */
export const WEBHOOK_ONLY_COUNTRIES: readonly string[] = ['AU'];

/** Lookup error codes (section 7). */
export type LookupErrorCode =
  'invalid_phone_number' | 'upstream_timeout' | 'upstream_error' | 'lookup_expired' | 'billing_error';

export const LOOKUP_ERROR_STATUS: Record<LookupErrorCode, number> = {
  invalid_phone_number: 400,
  upstream_timeout: 504,
  upstream_error: 502,
  lookup_expired: 502,
  billing_error: 500,
};

/** 2.4 */
export interface Cost {
  credits_used_for_query: number;
  total_credits_used: number;
  credit_limit: number;
}

/** 2.1: the 202 answer of a webhook-mode lookup. */
export interface LookupReceipt {
  status: 'started';
  correlation_id: string;
  phone_number: string;
  country: string;
}

/** 2.2: a successful result (webhook body; also our reading of the synchronous 200, whose body is "not shown"). */
export interface LookupSucceeded {
  status: 'succeeded';
  error_code: null;
  correlation_id: string;
  phone_number: string;
  country: string;
  do_not_call: boolean;
  /** ISO 8601 with microseconds and UTC offset. */
  timestamp: string;
  dnc_list_source: string;
  cost: Cost;
}

/** 2.3: a failed result (webhook body and the error shape of synchronous lookups). */
export interface LookupFailed {
  status: 'failed';
  error_code: LookupErrorCode;
  error: string;
  charged: boolean;
  correlation_id: string;
  phone_number: string;
  country: string;
  /** Synchronous responses carry a cost field (4.1); pushes of 2.3 do not list one. */
  cost?: Cost;
}

export type LookupResult = LookupSucceeded | LookupFailed;

/** 2.10 */
export interface RequestError {
  error: string;
  country?: string;
  supported_countries?: string[];
}

/** 2.6 */
export interface CountryUsage {
  country: string;
  request_count: number;
}

/** 2.7 */
export interface MonthUsage {
  year: number;
  month: number;
  start_date: string;
  end_date: string;
  request_count: number;
  credits_used: number;
}

/** 2.5 */
export interface BillingPeriodUsage {
  id: number;
  type: 'monthly' | 'annual';
  start_date: string;
  end_date: string;
  credit_limit: number;
  credits_used: number;
  credits_remaining: number;
  total_requests: number;
  by_country: CountryUsage[];
  unallocated_usage: { request_count: number; credits_used: number };
  monthly?: MonthUsage[];
}

/** 2.8 */
export interface UsagePage {
  customer_name: string;
  data: BillingPeriodUsage[];
  next_cursor: string | null;
}

/** 2.9 */
export interface LegacyUsage {
  customer_name: string;
  total_requests: number;
  monthly: Array<{ year: number; month: number; request_count: number }>;
  by_country: CountryUsage[];
}

/** Section 6: headers of a webhook push. */
export const PUSH_HEADERS = {
  correlationId: 'x-service-correlation-id',
  phoneNumber: 'x-service-phone-number',
  country: 'x-service-country',
  status: 'x-service-status',
} as const;
export const PUSH_USER_AGENT = 'Service-Webhooks/1.0';

/** Section 4.1: response headers of a lookup. */
export const LOOKUP_HEADERS = {
  creditCost: 'x-credit-cost',
  rateLimitLimit: 'x-ratelimit-limit',
  rateLimitRemaining: 'x-ratelimit-remaining',
  correlationId: 'x-service-correlation-id',
} as const;
