// undici's Pool and its errors without the rest of undici: its index loads every dispatcher, fetch, the
// cache stores, mocks and interceptors (≈ 100 files; twice the start-up time of these few), and a batch's
// first lookup waits for that. `request` is what index.js adds to every dispatcher; dnc uses no other API.
import type { Dispatcher as DispatcherType, errors as ErrorsType, Pool as PoolType } from 'undici';
import Dispatcher from 'undici/lib/dispatcher/dispatcher.js';
import Pool from 'undici/lib/dispatcher/pool.js';
import request from 'undici/lib/api/api-request.js';
import errors from 'undici/lib/core/errors.js';

const proto = Dispatcher.prototype as { request?: DispatcherType['request'] };
// The full undici, when something else loads it, puts the same function here.
proto.request ??= request;

export { Pool, errors };
export type { DispatcherType as Dispatcher, PoolType };
export type UndiciErrors = typeof ErrorsType;
