// Minimal ambient types for mvdan-sh (the GopherJS build of mvdan.cc/sh/v3/syntax).
// Syntax-tree nodes are Go structs exposed as JS objects; they are typed loosely on purpose.
declare module 'mvdan-sh' {
  /** Any syntax-tree node (File, Stmt, CallExpr, Word, Lit, ...). Inspect it with `syntax.NodeType`. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  export type ShNode = any;

  export interface ShPos {
    Offset(): number;
    Line(): number;
    Col(): number;
  }

  export interface ShParser {
    /** Parses a whole program; throws a ParseError-like object (with `Error()`) on syntax errors. */
    Parse(src: string, name: string): ShNode;
  }

  export interface ShSyntax {
    NewParser(...options: unknown[]): ShParser;
    NodeType(node: ShNode): string;
    /** Visits `node` and its descendants; returning false from `fn` skips a node's children. */
    Walk(node: ShNode, fn: (node: ShNode) => boolean): void;
    DebugPrint(node: ShNode): void;
    IsIncomplete(err: unknown): boolean;
    KeepComments(enabled: boolean): unknown;
    Variant(lang: unknown): unknown;
    LangBash: unknown;
    LangPOSIX: unknown;
    LangMirBSDKorn: unknown;
  }

  const sh: { syntax: ShSyntax };
  export default sh;
}
