/** The nodes the driver (compat/run.ts) started, as redis:// URLs. */
export const urls = (process.env.COMPAT_REDIS_URLS ?? '').split(',').filter(Boolean);
