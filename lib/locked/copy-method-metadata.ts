import 'reflect-metadata';

/**
 * Gives `wrapper` the identity of the method it replaces: every Reflect metadata entry defined on the
 * original function (what `@Cron`, `@Get`, `@UseGuards`, `SetMetadata` ... put there when applied before
 * the wrapping decorator), its `name` and its `length`. Metadata keyed by class and property name
 * (`design:*`, route parameters) is untouched by wrapping and needs no copy.
 */
export function copyMethodMetadata(original: Function, wrapper: Function): void {
  for (const key of Reflect.getOwnMetadataKeys(original)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, original), wrapper);
  }
  Object.defineProperty(wrapper, 'name', { value: original.name, configurable: true });
  Object.defineProperty(wrapper, 'length', { value: original.length, configurable: true });
}
