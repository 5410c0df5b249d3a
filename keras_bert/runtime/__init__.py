"""What every command shares at run time: a quiet console, the Keras
backend choice, the machine's devices and the precision they make worth
using (`hardware`), progress on stderr and the one-line error harness.

Standard library only at import: the commands use it before Keras loads.
"""
