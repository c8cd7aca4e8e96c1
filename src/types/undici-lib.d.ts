// Types of the undici files src/service/undici-pool.ts loads directly (undici types only its index).
declare module 'undici/lib/dispatcher/dispatcher.js' {
  import type { Dispatcher } from 'undici';
  const D: typeof Dispatcher;
  export default D;
}
declare module 'undici/lib/dispatcher/pool.js' {
  import type { Pool } from 'undici';
  const P: typeof Pool;
  export default P;
}
declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';
  const request: Dispatcher['request'];
  export default request;
}
declare module 'undici/lib/core/errors.js' {
  import type { errors } from 'undici';
  const e: typeof errors;
  export default e;
}
