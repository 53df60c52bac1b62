/// A scope's anonymous cleanup: its state, the switch, and a preview with its chart (`cleanup`).
public struct CleanupPage: ConsolePage {
    public static let template = "cleanup"
    let title = "Anonymous cleanup"
    let chrome: ConsoleChrome
    let notice: String?
    let facts: [ConsoleFact]
    /// What the switch's form sends (`on`, `off`) and its button's label.
    let toggleValue: String
    let toggleLabel: String
    let previewText: String
    /// Nil when no anonymous account falls due.
    let chart: Chart?

    public init(
        chrome: ConsoleChrome, notice: String?, facts: [ConsoleFact], toggleValue: String, toggleLabel: String,
        previewText: String, chart: Chart?
    ) {
        self.chrome = chrome
        self.notice = notice
        self.facts = facts
        self.toggleValue = toggleValue
        self.toggleLabel = toggleLabel
        self.previewText = previewText
        self.chart = chart
    }

    /// The accounts falling due per week, as bars of an inline SVG (its coordinates in its view box).
    public struct Chart: Sendable {
        let width: Int
        let height: Int
        let bars: [Bar]
        let title: String

        public init(width: Int, height: Int, bars: [Bar], title: String) {
            self.width = width
            self.height = height
            self.bars = bars
            self.title = title
        }
    }

    /// One week's bar, its count above it and its week below.
    public struct Bar: Sendable {
        let x: Int
        let y: Int
        let w: Int
        let h: Int
        let labelX: Int
        let countY: Int
        let axisY: Int
        let count: Int64
        /// The week's end (`MM-DD`), and the bar's tooltip.
        let week: String
        let tip: String

        public init(
            x: Int, y: Int, w: Int, h: Int, labelX: Int, countY: Int, axisY: Int, count: Int64, week: String,
            tip: String
        ) {
            self.x = x
            self.y = y
            self.w = w
            self.h = h
            self.labelX = labelX
            self.countY = countY
            self.axisY = axisY
            self.count = count
            self.week = week
            self.tip = tip
        }
    }
}
