import * as ts from 'typescript';
import { ENTER_HOOK } from './enter-hook';

/**
 * A TypeScript `before` transformer that makes every function of a file say it was entered: a call
 * `globalThis.__routeEnter?.(label)` is put first in the body of every function declaration and expression,
 * method, getter, setter, constructor and arrow (an expression body becomes `(enter, body)`), and in front of
 * every instance property initializer (which runs in the constructor TypeScript writes for a class without
 * one). Code at the top level of the module (run once, when it is loaded) is left as it is.
 */
export function enterCalls(label: string): ts.TransformerFactory<ts.SourceFile> {
  return (context) => {
    const { factory } = context;
    const enter = () =>
      factory.createCallChain(
        factory.createPropertyAccessExpression(factory.createIdentifier('globalThis'), ENTER_HOOK),
        factory.createToken(ts.SyntaxKind.QuestionDotToken),
        undefined,
        [factory.createStringLiteral(label)],
      );
    const block = (body: ts.Block) =>
      factory.updateBlock(body, [factory.createExpressionStatement(enter()), ...body.statements]);

    const visit = (node: ts.Node): ts.Node => {
      const visited = ts.visitEachChild(node, visit, context);
      if (
        (ts.isFunctionDeclaration(visited) ||
          ts.isFunctionExpression(visited) ||
          ts.isMethodDeclaration(visited) ||
          ts.isGetAccessorDeclaration(visited) ||
          ts.isSetAccessorDeclaration(visited) ||
          ts.isConstructorDeclaration(visited)) &&
        visited.body !== undefined
      ) {
        return withBody(factory, visited, block(visited.body));
      }
      if (ts.isArrowFunction(visited)) {
        const body = ts.isBlock(visited.body)
          ? block(visited.body)
          : factory.createParenthesizedExpression(factory.createComma(enter(), visited.body));
        return factory.updateArrowFunction(
          visited,
          visited.modifiers,
          visited.typeParameters,
          visited.parameters,
          visited.type,
          visited.equalsGreaterThanToken,
          body,
        );
      }
      if (
        ts.isPropertyDeclaration(visited) &&
        visited.initializer !== undefined &&
        !visited.modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.StaticKeyword)
      ) {
        return factory.updatePropertyDeclaration(
          visited,
          visited.modifiers,
          visited.name,
          visited.questionToken ?? visited.exclamationToken,
          visited.type,
          factory.createParenthesizedExpression(factory.createComma(enter(), visited.initializer)),
        );
      }
      return visited;
    };
    return (file) => ts.visitEachChild(file, visit, context);
  };
}

type WithBody =
  | ts.FunctionDeclaration
  | ts.FunctionExpression
  | ts.MethodDeclaration
  | ts.GetAccessorDeclaration
  | ts.SetAccessorDeclaration
  | ts.ConstructorDeclaration;

function withBody(factory: ts.NodeFactory, node: WithBody, body: ts.Block): ts.Node {
  if (ts.isFunctionDeclaration(node)) {
    return factory.updateFunctionDeclaration(
      node,
      node.modifiers,
      node.asteriskToken,
      node.name,
      node.typeParameters,
      node.parameters,
      node.type,
      body,
    );
  }
  if (ts.isFunctionExpression(node)) {
    return factory.updateFunctionExpression(
      node,
      node.modifiers,
      node.asteriskToken,
      node.name,
      node.typeParameters,
      node.parameters,
      node.type,
      body,
    );
  }
  if (ts.isMethodDeclaration(node)) {
    return factory.updateMethodDeclaration(
      node,
      node.modifiers,
      node.asteriskToken,
      node.name,
      node.questionToken,
      node.typeParameters,
      node.parameters,
      node.type,
      body,
    );
  }
  if (ts.isGetAccessorDeclaration(node)) {
    return factory.updateGetAccessorDeclaration(
      node,
      node.modifiers,
      node.name,
      node.parameters,
      node.type,
      body,
    );
  }
  if (ts.isSetAccessorDeclaration(node)) {
    return factory.updateSetAccessorDeclaration(node, node.modifiers, node.name, node.parameters, body);
  }
  return factory.updateConstructorDeclaration(node, node.modifiers, node.parameters, body);
}
