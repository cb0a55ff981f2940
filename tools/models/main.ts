import { modelsCommand } from './command.ts'

// Standalone entry (`node --import tsx tools/models/main.ts …`); `edge-infer models …` mounts the same command.
await modelsCommand().parseAsync(process.argv)
