/** Full tool outputs kept aside when a turn only shows the model a page of them. */
export interface ToolResultRepository {
  /** Stores the content for the turn; returns a fresh id (`tr_` + 16 hex digits). */
  saveToolResult(turnId: string, tool: string, content: string): Promise<string>;
  /** The stored result, only when its turn belongs to this conversation (else undefined, as for an unknown id). */
  toolResult(id: string, conversationId: string): Promise<{ content: string; turnId: string } | undefined>;
}
