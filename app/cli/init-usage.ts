/** `switchboard init --help`, apart from the wizard so that printing it loads nothing else. */
export const INIT_USAGE = `usage: switchboard init [--yes] [--dir DIR] [--force] [--json] [--no-probe]
        [--provider openai|anthropic|openai-compatible|none] [--model M] [--base-url URL] [--provider-key KEY]
        [--channels slack,discord,sms,whatsapp,email,telegram] [--access pairing|allowlist|open] [--operator CHANNEL:ID]...
        [channel flags: --slack-mode socket|http --slack-name N --discord-app-id ID --public-url URL
         --twilio-account-sid AC… --whatsapp-from whatsapp:+E164 --whatsapp-template-sid HX…
         --email-address A --imap-host H --imap-port P --smtp-host H --smtp-port P --email-user U --telegram-public-url URL]

Writes DIR/switchboard.yaml and DIR/.env (API and operator keys generated; .env is loaded by every
switchboard command run in DIR), tests the provider with one tiny request, and prints what each
chosen platform needs. Asks in a terminal; --yes takes the flags and the defaults (for scripts).
Exit: 0 written (and the provider answered), 1 written but the provider probe failed, 2 bad flags or
files already there (--force overwrites).`;
