/** The global that instrumented lib/ code calls on entering any of its functions: `__routeEnter(file)`. */
export const ENTER_HOOK = '__routeEnter';
