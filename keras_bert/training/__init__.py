"""The spine every training command shares: the recipe a run reads
(`recipe`), the folder it writes (`RunFolder`: its lock, its files, the run
a rerun sets aside), the record it keeps of itself (`run_record`), its checkpoints
(`checkpoints`), and the guard on every file a command writes
(`output_guard`)."""
