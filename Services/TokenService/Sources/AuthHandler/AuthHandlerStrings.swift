/// The hosted handler's words (docs/oauth-flows.md), in the action page's languages: English,
/// Italian, Russian, Thai and Persian (right to left). The language is the SDK's `hl`, else the
/// browser's, else English (`ActionPageStrings.choose`).
struct AuthHandlerStrings: Sendable {
    var rightToLeft = false
    var pageTitle: String
    var signingIn: String
    var popupDone: String
    var returningToApp: String
    var returnToApp: String
    var errorTitle: String
    var invalidRequest: String
    var invalidApiKey: String
    var unauthorizedDomain: String
    var unauthorizedApp: String
    var notAllowed: String
    var expired: String
    var noOpener: String
    var storageBlocked: String
    var unavailable: String
    var unknownError: String

    static let supported: [String: AuthHandlerStrings] = [
        "en": english, "it": italian, "ru": russian, "th": thai, "fa": persian,
    ]

    static func choose(lang: String?, acceptLanguage: String?) -> (code: String, strings: AuthHandlerStrings) {
        let code = ActionPageStrings.choose(lang: lang, acceptLanguage: acceptLanguage).code
        return (code, supported[code] ?? english)
    }

    static let english = AuthHandlerStrings(
        pageTitle: "Sign in",
        signingIn: "Signing you in…",
        popupDone: "You are signed in. This window closes by itself; if it does not, you can close it.",
        returningToApp: "Returning to the app…",
        returnToApp: "Return to the app",
        errorTitle: "Sign-in failed",
        invalidRequest: "This sign-in request is not valid. Go back to the app and try again.",
        invalidApiKey: "This sign-in request is not for this service.",
        unauthorizedDomain: "The app's address is not authorized to sign in with this project.",
        unauthorizedApp: "This app is not authorized to sign in with this project.",
        notAllowed: "This sign-in method is not enabled.",
        expired: "This sign-in has expired or was already completed. Go back to the app and try again.",
        noOpener: "The window that started this sign-in is gone. Close this window and try again.",
        storageBlocked: "This browser blocks the storage the sign-in needs to finish.",
        unavailable: "The service is unavailable right now. Try again in a moment.",
        unknownError: "Something went wrong. Try again later.")

    static let italian = AuthHandlerStrings(
        pageTitle: "Accesso",
        signingIn: "Accesso in corso…",
        popupDone: "Accesso eseguito. Questa finestra si chiude da sola; se non succede, puoi chiuderla.",
        returningToApp: "Ritorno all'app…",
        returnToApp: "Torna all'app",
        errorTitle: "Accesso non riuscito",
        invalidRequest: "Questa richiesta di accesso non è valida. Torna all'app e riprova.",
        invalidApiKey: "Questa richiesta di accesso non è destinata a questo servizio.",
        unauthorizedDomain: "L'indirizzo dell'app non è autorizzato ad accedere con questo progetto.",
        unauthorizedApp: "Questa app non è autorizzata ad accedere con questo progetto.",
        notAllowed: "Questo metodo di accesso non è attivo.",
        expired: "Questo accesso è scaduto o è già stato completato. Torna all'app e riprova.",
        noOpener: "La finestra che ha avviato l'accesso non c'è più. Chiudi questa finestra e riprova.",
        storageBlocked: "Questo browser blocca l'archiviazione necessaria per completare l'accesso.",
        unavailable: "Il servizio non è disponibile al momento. Riprova tra poco.",
        unknownError: "Qualcosa è andato storto. Riprova più tardi.")

    static let russian = AuthHandlerStrings(
        pageTitle: "Вход",
        signingIn: "Выполняется вход…",
        popupDone: "Вход выполнен. Это окно закроется само; если нет, закройте его.",
        returningToApp: "Возврат в приложение…",
        returnToApp: "Вернуться в приложение",
        errorTitle: "Не удалось войти",
        invalidRequest: "Этот запрос на вход недействителен. Вернитесь в приложение и попробуйте снова.",
        invalidApiKey: "Этот запрос на вход предназначен не для этого сервиса.",
        unauthorizedDomain: "Адрес приложения не разрешён для входа в этот проект.",
        unauthorizedApp: "Этому приложению не разрешён вход в этот проект.",
        notAllowed: "Этот способ входа не включён.",
        expired: "Срок этого входа истёк, или вход уже выполнен. Вернитесь в приложение и попробуйте снова.",
        noOpener: "Окно, из которого начат вход, закрыто. Закройте это окно и попробуйте снова.",
        storageBlocked: "Браузер блокирует хранилище, нужное для завершения входа.",
        unavailable: "Сервис сейчас недоступен. Повторите попытку чуть позже.",
        unknownError: "Что-то пошло не так. Повторите попытку позже.")

    static let thai = AuthHandlerStrings(
        pageTitle: "ลงชื่อเข้าใช้",
        signingIn: "กำลังลงชื่อเข้าใช้…",
        popupDone: "ลงชื่อเข้าใช้แล้ว หน้าต่างนี้จะปิดเอง หากไม่ปิด คุณปิดได้เลย",
        returningToApp: "กำลังกลับไปที่แอป…",
        returnToApp: "กลับไปที่แอป",
        errorTitle: "ลงชื่อเข้าใช้ไม่สำเร็จ",
        invalidRequest: "คำขอลงชื่อเข้าใช้นี้ไม่ถูกต้อง กลับไปที่แอปแล้วลองอีกครั้ง",
        invalidApiKey: "คำขอลงชื่อเข้าใช้นี้ไม่ได้มีไว้สำหรับบริการนี้",
        unauthorizedDomain: "ที่อยู่ของแอปไม่ได้รับอนุญาตให้ลงชื่อเข้าใช้กับโปรเจกต์นี้",
        unauthorizedApp: "แอปนี้ไม่ได้รับอนุญาตให้ลงชื่อเข้าใช้กับโปรเจกต์นี้",
        notAllowed: "วิธีลงชื่อเข้าใช้นี้ไม่ได้เปิดใช้งาน",
        expired: "การลงชื่อเข้าใช้นี้หมดอายุหรือเสร็จสิ้นไปแล้ว กลับไปที่แอปแล้วลองอีกครั้ง",
        noOpener: "หน้าต่างที่เริ่มการลงชื่อเข้าใช้ถูกปิดไปแล้ว ปิดหน้าต่างนี้แล้วลองอีกครั้ง",
        storageBlocked: "เบราว์เซอร์นี้บล็อกพื้นที่จัดเก็บที่จำเป็นต่อการลงชื่อเข้าใช้",
        unavailable: "บริการไม่พร้อมใช้งานในขณะนี้ โปรดลองอีกครั้งในอีกสักครู่",
        unknownError: "เกิดข้อผิดพลาด โปรดลองอีกครั้งภายหลัง")

    static let persian = AuthHandlerStrings(
        rightToLeft: true,
        pageTitle: "ورود",
        signingIn: "در حال ورود…",
        popupDone: "وارد شدید. این پنجره خودش بسته می‌شود؛ اگر بسته نشد، می‌توانید آن را ببندید.",
        returningToApp: "در حال بازگشت به برنامه…",
        returnToApp: "بازگشت به برنامه",
        errorTitle: "ورود ناموفق بود",
        invalidRequest: "این درخواست ورود معتبر نیست. به برنامه برگردید و دوباره تلاش کنید.",
        invalidApiKey: "این درخواست ورود برای این سرویس نیست.",
        unauthorizedDomain: "نشانی برنامه برای ورود به این پروژه مجاز نیست.",
        unauthorizedApp: "این برنامه برای ورود به این پروژه مجاز نیست.",
        notAllowed: "این روش ورود فعال نیست.",
        expired: "مهلت این ورود تمام شده یا ورود قبلاً انجام شده است. به برنامه برگردید و دوباره تلاش کنید.",
        noOpener: "پنجره‌ای که ورود را آغاز کرد دیگر باز نیست. این پنجره را ببندید و دوباره تلاش کنید.",
        storageBlocked: "این مرورگر فضای ذخیره‌ای را که ورود به آن نیاز دارد مسدود کرده است.",
        unavailable: "سرویس اکنون در دسترس نیست. کمی بعد دوباره تلاش کنید.",
        unknownError: "مشکلی پیش آمد. بعداً دوباره تلاش کنید.")
}
