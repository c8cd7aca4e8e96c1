// The shapes of the service's values (section 2 of its description), checked wherever its answers are read.

/** 2.1: "string (UUID form)". */
export const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export const E164 = /^\+[1-9]\d{3,14}$/;

export const ALPHA2 = /^[A-Z]{2}$/;

export type Json = Record<string, unknown>;

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
