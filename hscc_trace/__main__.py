from hscc_trace.cli import main

main()
