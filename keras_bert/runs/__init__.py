"""What every run is made of, whichever its kind: the recipe it reads
(`recipe`), the folder it writes (`RunFolder`, told by each kind of run,
`RunKind`, what its files, lock and refusals are; the run a rerun sets aside,
`ReplacedRun`), the record it keeps of itself (`run_record`), its
checkpoints (`checkpoints`), and the guard on every file a command writes
(`output_guard`). It knows no kind of run: each declares itself here."""
