"""The guide: every experiment run, each claim's verdict, one report."""
