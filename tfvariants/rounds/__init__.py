"""The adaptive rounds below the commands: what the next round runs, decided once for
every task (decide.py) from what each task's hook judged at the last look."""
