from msprof_py.cli import main

main()
