import Foundation

/// The hosted action page's words, per language (docs/protocol/sdks.md#what-the-sdks-depend-on): English and
/// the seed documents' Italian, Russian, Thai and Persian (right to left). A language the page does not know
/// falls back to English.
struct ActionPageStrings: Sendable {
    var rightToLeft = false
    var pageTitle: String
    var verifyEmailTitle: String
    var verifyEmailIntro: String
    var verifyEmailButton: String
    var verifyEmailDone: String
    var resetPasswordTitle: String
    var resetPasswordIntro: String
    var newPasswordLabel: String
    var resetPasswordButton: String
    var resetPasswordDone: String
    var changeEmailTitle: String
    var changeEmailIntro: String
    var changeEmailButton: String
    var changeEmailDone: String
    var recoverEmailTitle: String
    var recoverEmailIntro: String
    var recoverEmailButton: String
    var recoverEmailDone: String
    var signInTitle: String
    var signInIntro: String
    var emailLabel: String
    var signInButton: String
    var signInDone: String
    var openApp: String
    var continueLink: String
    var errorTitle: String
    var invalidCode: String
    var expiredCode: String
    var weakPassword: String
    var emailMismatch: String
    var userDisabled: String
    var notAllowed: String
    var invalidLink: String
    var formExpired: String
    var unavailable: String
    var unknownError: String

    static let supported: [String: ActionPageStrings] = [
        "en": english, "it": italian, "ru": russian, "th": thai, "fa": persian,
    ]

    /// The language asked for by the link (`lang`), else the browser's first known one, else English.
    static func choose(lang: String?, acceptLanguage: String?) -> (code: String, strings: ActionPageStrings) {
        var candidates: [String] = []
        if let lang { candidates.append(lang) }
        if let acceptLanguage {
            candidates += acceptLanguage.split(separator: ",").map {
                String($0.split(separator: ";").first ?? "").trimmingCharacters(in: .whitespaces)
            }
        }
        for candidate in candidates {
            let primary = candidate.lowercased().split(separator: "-").first.map(String.init) ?? ""
            if let strings = supported[primary] { return (primary, strings) }
        }
        return ("en", english)
    }

    static let english = ActionPageStrings(
        pageTitle: "Account action",
        verifyEmailTitle: "Verify your email",
        verifyEmailIntro: "Confirm that %EMAIL% is your email address.",
        verifyEmailButton: "Verify email",
        verifyEmailDone: "Your email address has been verified. You can now sign in with your new account.",
        resetPasswordTitle: "Reset your password",
        resetPasswordIntro: "Choose a new password for %EMAIL%.",
        newPasswordLabel: "New password (at least 6 characters)",
        resetPasswordButton: "Save password",
        resetPasswordDone: "Your password has been changed. You can now sign in with your new password.",
        changeEmailTitle: "Confirm your new email",
        changeEmailIntro: "Confirm %NEW_EMAIL% as the new sign-in email of your account.",
        changeEmailButton: "Confirm new email",
        changeEmailDone: "Your sign-in email has been changed and verified.",
        recoverEmailTitle: "Restore your email",
        recoverEmailIntro: "Restore %EMAIL% as the sign-in email of your account.",
        recoverEmailButton: "Restore email",
        recoverEmailDone: "Your sign-in email has been restored.",
        signInTitle: "Sign in",
        signInIntro: "Enter the email address this link was sent to, to finish signing in.",
        emailLabel: "Email address",
        signInButton: "Sign in",
        signInDone: "You are signed in as %EMAIL%, and your email address is verified.",
        openApp: "Open the app to finish signing in",
        continueLink: "Continue",
        errorTitle: "Something went wrong",
        invalidCode: "This link is invalid or has already been used. Ask for a new one.",
        expiredCode: "This link has expired. Ask for a new one.",
        weakPassword: "The password must be 6 to 4096 characters long.",
        emailMismatch: "This is not the email address the link was sent to.",
        userDisabled: "This account has been disabled.",
        notAllowed: "This kind of sign-in is not enabled.",
        invalidLink: "This link is incomplete or not meant for this service.",
        formExpired: "This form has expired. Open the link from your email again.",
        unavailable: "The service is temporarily unavailable. Try again in a moment.",
        unknownError: "The request could not be completed.")

    static let italian = ActionPageStrings(
        pageTitle: "Azione sull'account",
        verifyEmailTitle: "Verifica la tua email",
        verifyEmailIntro: "Conferma che %EMAIL% è il tuo indirizzo email.",
        verifyEmailButton: "Verifica email",
        verifyEmailDone: "Il tuo indirizzo email è stato verificato. Ora puoi accedere con il tuo nuovo account.",
        resetPasswordTitle: "Reimposta la password",
        resetPasswordIntro: "Scegli una nuova password per %EMAIL%.",
        newPasswordLabel: "Nuova password (almeno 6 caratteri)",
        resetPasswordButton: "Salva la password",
        resetPasswordDone: "La password è stata cambiata. Ora puoi accedere con la nuova password.",
        changeEmailTitle: "Conferma la nuova email",
        changeEmailIntro: "Conferma %NEW_EMAIL% come nuova email di accesso del tuo account.",
        changeEmailButton: "Conferma la nuova email",
        changeEmailDone: "La tua email di accesso è stata cambiata e verificata.",
        recoverEmailTitle: "Ripristina la tua email",
        recoverEmailIntro: "Ripristina %EMAIL% come email di accesso del tuo account.",
        recoverEmailButton: "Ripristina email",
        recoverEmailDone: "La tua email di accesso è stata ripristinata.",
        signInTitle: "Accedi",
        signInIntro: "Inserisci l'indirizzo email a cui è stato inviato questo link per completare l'accesso.",
        emailLabel: "Indirizzo email",
        signInButton: "Accedi",
        signInDone: "Hai effettuato l'accesso come %EMAIL% e il tuo indirizzo email è verificato.",
        openApp: "Apri l'app per completare l'accesso",
        continueLink: "Continua",
        errorTitle: "Qualcosa è andato storto",
        invalidCode: "Questo link non è valido o è già stato usato. Richiedine uno nuovo.",
        expiredCode: "Questo link è scaduto. Richiedine uno nuovo.",
        weakPassword: "La password deve avere da 6 a 4096 caratteri.",
        emailMismatch: "Non è l'indirizzo email a cui è stato inviato il link.",
        userDisabled: "Questo account è stato disattivato.",
        notAllowed: "Questo tipo di accesso non è abilitato.",
        invalidLink: "Questo link è incompleto o non è destinato a questo servizio.",
        formExpired: "Questo modulo è scaduto. Apri di nuovo il link dalla tua email.",
        unavailable: "Il servizio non è al momento disponibile. Riprova tra poco.",
        unknownError: "Non è stato possibile completare la richiesta.")

    static let russian = ActionPageStrings(
        pageTitle: "Действие с аккаунтом",
        verifyEmailTitle: "Подтвердите адрес электронной почты",
        verifyEmailIntro: "Подтвердите, что %EMAIL% — ваш адрес электронной почты.",
        verifyEmailButton: "Подтвердить адрес",
        verifyEmailDone: "Ваш адрес электронной почты подтверждён. Теперь вы можете войти в новый аккаунт.",
        resetPasswordTitle: "Сброс пароля",
        resetPasswordIntro: "Придумайте новый пароль для %EMAIL%.",
        newPasswordLabel: "Новый пароль (не менее 6 символов)",
        resetPasswordButton: "Сохранить пароль",
        resetPasswordDone: "Пароль изменён. Теперь вы можете войти с новым паролем.",
        changeEmailTitle: "Подтвердите новый адрес",
        changeEmailIntro: "Подтвердите %NEW_EMAIL% как новый адрес для входа в аккаунт.",
        changeEmailButton: "Подтвердить новый адрес",
        changeEmailDone: "Адрес для входа изменён и подтверждён.",
        recoverEmailTitle: "Восстановление адреса",
        recoverEmailIntro: "Восстановите %EMAIL% как адрес для входа в аккаунт.",
        recoverEmailButton: "Восстановить адрес",
        recoverEmailDone: "Адрес для входа восстановлен.",
        signInTitle: "Вход",
        signInIntro: "Введите адрес электронной почты, на который пришла эта ссылка, чтобы завершить вход.",
        emailLabel: "Адрес электронной почты",
        signInButton: "Войти",
        signInDone: "Вы вошли как %EMAIL%, и ваш адрес электронной почты подтверждён.",
        openApp: "Откройте приложение, чтобы завершить вход",
        continueLink: "Продолжить",
        errorTitle: "Что-то пошло не так",
        invalidCode: "Ссылка недействительна или уже использована. Запросите новую.",
        expiredCode: "Срок действия ссылки истёк. Запросите новую.",
        weakPassword: "Пароль должен содержать от 6 до 4096 символов.",
        emailMismatch: "Ссылка была отправлена на другой адрес.",
        userDisabled: "Этот аккаунт отключён.",
        notAllowed: "Этот способ входа не включён.",
        invalidLink: "Ссылка неполная или предназначена не для этого сервиса.",
        formExpired: "Срок действия формы истёк. Откройте ссылку из письма ещё раз.",
        unavailable: "Сервис временно недоступен. Повторите попытку чуть позже.",
        unknownError: "Не удалось выполнить запрос.")

    static let thai = ActionPageStrings(
        pageTitle: "การดำเนินการกับบัญชี",
        verifyEmailTitle: "ยืนยันอีเมลของคุณ",
        verifyEmailIntro: "ยืนยันว่า %EMAIL% เป็นที่อยู่อีเมลของคุณ",
        verifyEmailButton: "ยืนยันอีเมล",
        verifyEmailDone: "ยืนยันที่อยู่อีเมลของคุณแล้ว คุณสามารถลงชื่อเข้าใช้บัญชีใหม่ได้แล้ว",
        resetPasswordTitle: "รีเซ็ตรหัสผ่าน",
        resetPasswordIntro: "ตั้งรหัสผ่านใหม่สำหรับ %EMAIL%",
        newPasswordLabel: "รหัสผ่านใหม่ (อย่างน้อย 6 ตัวอักษร)",
        resetPasswordButton: "บันทึกรหัสผ่าน",
        resetPasswordDone: "เปลี่ยนรหัสผ่านแล้ว คุณสามารถลงชื่อเข้าใช้ด้วยรหัสผ่านใหม่ได้แล้ว",
        changeEmailTitle: "ยืนยันอีเมลใหม่",
        changeEmailIntro: "ยืนยัน %NEW_EMAIL% เป็นอีเมลสำหรับลงชื่อเข้าใช้ใหม่ของบัญชีคุณ",
        changeEmailButton: "ยืนยันอีเมลใหม่",
        changeEmailDone: "เปลี่ยนและยืนยันอีเมลสำหรับลงชื่อเข้าใช้แล้ว",
        recoverEmailTitle: "กู้คืนอีเมลของคุณ",
        recoverEmailIntro: "กู้คืน %EMAIL% เป็นอีเมลสำหรับลงชื่อเข้าใช้ของบัญชีคุณ",
        recoverEmailButton: "กู้คืนอีเมล",
        recoverEmailDone: "กู้คืนอีเมลสำหรับลงชื่อเข้าใช้แล้ว",
        signInTitle: "ลงชื่อเข้าใช้",
        signInIntro: "กรอกที่อยู่อีเมลที่ได้รับลิงก์นี้เพื่อลงชื่อเข้าใช้ให้เสร็จสิ้น",
        emailLabel: "ที่อยู่อีเมล",
        signInButton: "ลงชื่อเข้าใช้",
        signInDone: "คุณลงชื่อเข้าใช้ในชื่อ %EMAIL% แล้ว และยืนยันที่อยู่อีเมลแล้ว",
        openApp: "เปิดแอปเพื่อลงชื่อเข้าใช้ให้เสร็จสิ้น",
        continueLink: "ดำเนินการต่อ",
        errorTitle: "เกิดข้อผิดพลาด",
        invalidCode: "ลิงก์นี้ไม่ถูกต้องหรือถูกใช้ไปแล้ว โปรดขอลิงก์ใหม่",
        expiredCode: "ลิงก์นี้หมดอายุแล้ว โปรดขอลิงก์ใหม่",
        weakPassword: "รหัสผ่านต้องมีความยาว 6 ถึง 4096 ตัวอักษร",
        emailMismatch: "นี่ไม่ใช่ที่อยู่อีเมลที่ได้รับลิงก์นี้",
        userDisabled: "บัญชีนี้ถูกปิดใช้งานแล้ว",
        notAllowed: "ไม่ได้เปิดใช้การลงชื่อเข้าใช้แบบนี้",
        invalidLink: "ลิงก์นี้ไม่สมบูรณ์หรือไม่ได้มีไว้สำหรับบริการนี้",
        formExpired: "แบบฟอร์มนี้หมดอายุแล้ว โปรดเปิดลิงก์จากอีเมลอีกครั้ง",
        unavailable: "บริการไม่พร้อมใช้งานชั่วคราว โปรดลองอีกครั้งในภายหลัง",
        unknownError: "ไม่สามารถดำเนินการตามคำขอได้")

    static let persian = ActionPageStrings(
        rightToLeft: true,
        pageTitle: "اقدام روی حساب",
        verifyEmailTitle: "تأیید ایمیل",
        verifyEmailIntro: "تأیید کنید که %EMAIL% نشانی ایمیل شماست.",
        verifyEmailButton: "تأیید ایمیل",
        verifyEmailDone: "نشانی ایمیل شما تأیید شد. اکنون می‌توانید با حساب جدید خود وارد شوید.",
        resetPasswordTitle: "بازنشانی گذرواژه",
        resetPasswordIntro: "یک گذرواژهٔ جدید برای %EMAIL% انتخاب کنید.",
        newPasswordLabel: "گذرواژهٔ جدید (دست‌کم ۶ نویسه)",
        resetPasswordButton: "ذخیرهٔ گذرواژه",
        resetPasswordDone: "گذرواژهٔ شما تغییر کرد. اکنون می‌توانید با گذرواژهٔ جدید وارد شوید.",
        changeEmailTitle: "تأیید ایمیل جدید",
        changeEmailIntro: "%NEW_EMAIL% را به‌عنوان ایمیل ورود جدید حساب خود تأیید کنید.",
        changeEmailButton: "تأیید ایمیل جدید",
        changeEmailDone: "ایمیل ورود شما تغییر کرد و تأیید شد.",
        recoverEmailTitle: "بازگرداندن ایمیل",
        recoverEmailIntro: "%EMAIL% را به‌عنوان ایمیل ورود حساب خود بازگردانید.",
        recoverEmailButton: "بازگرداندن ایمیل",
        recoverEmailDone: "ایمیل ورود شما بازگردانده شد.",
        signInTitle: "ورود",
        signInIntro: "برای تکمیل ورود، نشانی ایمیلی را که این پیوند به آن فرستاده شده وارد کنید.",
        emailLabel: "نشانی ایمیل",
        signInButton: "ورود",
        signInDone: "شما با %EMAIL% وارد شده‌اید و نشانی ایمیل شما تأیید شده است.",
        openApp: "برای تکمیل ورود، برنامه را باز کنید",
        continueLink: "ادامه",
        errorTitle: "مشکلی پیش آمد",
        invalidCode: "این پیوند نامعتبر است یا قبلاً استفاده شده است. پیوند جدیدی درخواست کنید.",
        expiredCode: "این پیوند منقضی شده است. پیوند جدیدی درخواست کنید.",
        weakPassword: "گذرواژه باید بین ۶ تا ۴۰۹۶ نویسه باشد.",
        emailMismatch: "این نشانی ایمیلی نیست که پیوند به آن فرستاده شده است.",
        userDisabled: "این حساب غیرفعال شده است.",
        notAllowed: "این روش ورود فعال نیست.",
        invalidLink: "این پیوند ناقص است یا برای این سرویس نیست.",
        formExpired: "این فرم منقضی شده است. پیوند را دوباره از ایمیل خود باز کنید.",
        unavailable: "سرویس موقتاً در دسترس نیست. کمی بعد دوباره تلاش کنید.",
        unknownError: "درخواست انجام نشد.")
}
